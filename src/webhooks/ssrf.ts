// SSRF guard for webhook URLs: https only, and no host that is or resolves to a loopback, private,
// link-local, CGNAT, multicast, reserved or cloud-metadata address (unless private webhooks are allowed).
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import type { Resolver } from 'node:dns/promises';

const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 96] /* unspecified, loopback, deprecated IPv4-compatible */, ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(addr, prefix, 'ipv6');

/** True for an address a webhook must never reach (IPv4-mapped IPv6 is judged as the IPv4 inside). */
export function isBlockedIp(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 0) return true;
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped) return isBlockedIp(mapped[1]);
    if (/^::ffff:/i.test(ip) || /^::(\d+\.){3}\d+$/.test(ip)) return true;
    return blocked.check(ip, 'ipv6');
  }
  return blocked.check(ip, 'ipv4');
}

export interface UrlVerdict { ok: boolean; reason?: string }

const hostOf = (u: URL) => u.hostname.replace(/^\[|\]$/g, '');

/** Syntax and scheme checks that need no DNS. */
export function checkUrlShape(raw: string, allowPrivate: boolean): UrlVerdict & { url?: URL } {
  let u: URL;
  try { u = new URL(raw); } catch { return { ok: false, reason: 'url must be an absolute URL.' }; }
  if (raw.length > 2048) return { ok: false, reason: 'url must be at most 2048 characters.' };
  if (u.protocol !== 'https:' && !(allowPrivate && u.protocol === 'http:')) return { ok: false, reason: 'url must use https.' };
  if (u.username || u.password) return { ok: false, reason: 'url must not carry credentials.' };
  if (!u.hostname) return { ok: false, reason: 'url must name a host.' };
  return { ok: true, url: u };
}

/** Full check at create/update time: shape, then every address the host resolves to. */
export async function checkWebhookUrl(raw: string, allowPrivate: boolean, resolver: Resolver): Promise<UrlVerdict> {
  const shape = checkUrlShape(raw, allowPrivate);
  if (!shape.ok || allowPrivate) return shape;
  const host = hostOf(shape.url!);
  if (net.isIP(host)) return isBlockedIp(host) ? { ok: false, reason: 'url points at a private or reserved address.' } : { ok: true };
  if (/(^|\.)localhost\.?$/i.test(host)) return { ok: false, reason: 'url points at a private or reserved address.' };
  const addrs = await resolveAll(resolver, host);
  if (addrs.length === 0) return { ok: false, reason: `url host ${host} does not resolve.` };
  if (addrs.some(isBlockedIp)) return { ok: false, reason: 'url resolves to a private or reserved address.' };
  return { ok: true };
}

async function resolveAll(resolver: Resolver, host: string): Promise<string[]> {
  const [a, aaaa] = await Promise.all([resolver.resolve4(host).catch(() => []), resolver.resolve6(host).catch(() => [])]);
  return [...a, ...aaaa];
}

/** Like resolveAll, but a lookup failure other than "no such name / no such record" is thrown (it may pass). */
async function resolveOrThrow(resolver: Resolver, host: string): Promise<string[]> {
  const absent = (err: { code?: string }) => { if (err.code === 'ENOTFOUND' || err.code === 'ENODATA') return [] as string[]; throw err; };
  const [a, aaaa] = await Promise.allSettled([resolver.resolve4(host).catch(absent), resolver.resolve6(host).catch(absent)]);
  const got = [a, aaaa].flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  const failed = [a, aaaa].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (got.length === 0 && failed) throw failed.reason;
  return got;
}

/**
 * A `lookup` for http(s).request that resolves with the configured resolver and refuses blocked
 * addresses, so the connection goes to the address that was checked (no DNS rebinding).
 */
export function guardedLookup(resolver: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    const cb = callback as (err: Error | null, address: string | { address: string; family: number }[], family?: number) => void;
    const host = hostname.replace(/^\[|\]$/g, '');
    const fail = (msg: string, code: string) => cb(Object.assign(new Error(msg), { code }), '', 0);
    const done = (addrs: string[]) => {
      const ok = addrs.filter((a) => !isBlockedIp(a));
      // Not resolving (now) is a connection error that may pass: retried. Only a blocked address is final.
      if (addrs.length === 0) return fail(`${host} does not resolve`, 'ENOTFOUND');
      if (ok.length !== addrs.length) return fail(`${host} resolves to a private or reserved address`, 'EBLOCKED');
      if (options.all) return cb(null, ok.map((a) => ({ address: a, family: net.isIP(a) })));
      cb(null, ok[0], net.isIP(ok[0]));
    };
    if (net.isIP(host)) return done([host]);
    resolveOrThrow(resolver, host).then(done, (err: Error & { code?: string }) => fail(`${host}: ${err.message}`, err.code ?? 'EAI_AGAIN'));
  };
}
