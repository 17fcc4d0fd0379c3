// Which addresses and URLs a webhook may reach (SSRF rules): https only, and no host that is or resolves
// to a loopback, private, link-local, CGNAT, multicast, reserved or cloud-metadata address. With private
// webhooks allowed, http and private addresses pass, but link-local, metadata, 0.0.0.0/8 and multicast never do.
// Pure: name resolution is passed in (services/webhooks.ts at create time, webhooks/ssrf.ts at connect time).
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 96] /* unspecified, loopback, deprecated IPv4-compatible */,
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(addr, prefix, 'ipv6');

/** Refused even when private webhooks are allowed: 'this' network, link-local, metadata services, multicast, reserved. */
const always = new BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8],
  ['169.254.0.0', 16],
  ['100.100.100.200', 32] /* Alibaba Cloud metadata */,
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  always.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 128],
  ['fe80::', 10],
  ['fd00:ec2::254', 128] /* AWS metadata over IPv6 */,
  ['ff00::', 8],
] as const)
  always.addSubnet(addr, prefix, 'ipv6');

/** Host names of cloud metadata services, refused by name whatever they resolve to. */
export const METADATA_NAMES =
  /^(metadata|metadata\.google\.internal|metadata\.goog|instance-data|instance-data\.ec2\.internal)\.?$/i;

/** The IPv4 address carried inside an IPv6 one (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96), else null. */
function embeddedV4(ip: string): string | null {
  const words = expandV6(ip);
  if (!words) return null;
  const head = words.slice(0, 6);
  const zero = head.every((w) => w === 0);
  const mapped = head.slice(0, 5).every((w) => w === 0) && head[5] === 0xffff;
  const nat64 = head[0] === 0x64 && head[1] === 0xff9b && head.slice(2).every((w) => w === 0);
  if (!(zero && (words[6] !== 0 || words[7] > 1)) && !mapped && !nat64) return null;
  return [words[6] >> 8, words[6] & 255, words[7] >> 8, words[7] & 255].join('.');
}

/** The eight 16-bit words of an IPv6 address (dotted IPv4 tail allowed), or null. */
function expandV6(ip: string): number[] | null {
  let s = ip.toLowerCase();
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (tail) {
    const b = tail.slice(1).map(Number);
    s = s.slice(0, tail.index) + `${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [l, r] = s.split('::');
  const left = l ? l.split(':') : [];
  const right = r === undefined ? [] : r ? r.split(':') : [];
  const fill = r === undefined ? 0 : 8 - left.length - right.length;
  const words = [...left, ...Array<string>(Math.max(fill, 0)).fill('0'), ...right].map((w) => parseInt(w, 16));
  return words.length === 8 && words.every((w) => w >= 0 && w <= 0xffff) ? words : null;
}

/**
 * True for an address a webhook must never reach. An IPv4 address inside an IPv6 one is judged as that
 * IPv4 address. With `allowPrivate`, only the always-refused ranges count.
 */
export function isBlockedIp(ip: string, allowPrivate = false): boolean {
  const family = isIP(ip);
  if (family === 0) return true;
  if (family === 6) {
    const v4 = embeddedV4(ip);
    if (v4 !== null && isBlockedIp(v4, allowPrivate)) return true;
    return allowPrivate ? always.check(ip, 'ipv6') : blocked.check(ip, 'ipv6');
  }
  return allowPrivate ? always.check(ip, 'ipv4') : blocked.check(ip, 'ipv4');
}
/**
 * True for an address no connection of ours may reach, whatever the settings: the always-refused ranges above
 * (link-local, unspecified, multicast, broadcast and reserved, cloud metadata). Loopback and private addresses
 * pass. The outbound loop applies it to every address an MX resolves to (outbound/deliver.ts).
 */
export const isNeverReachable = (ip: string): boolean => isBlockedIp(ip, true);

export interface UrlVerdict {
  ok: boolean;
  reason?: string;
}

const hostOf = (u: URL) => u.hostname.replace(/^\[|\]$/g, '');

/** Syntax and scheme checks that need no DNS. */
export function checkUrlShape(raw: string, allowPrivate: boolean): UrlVerdict & { url?: URL } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { ok: false, reason: 'url must be an absolute URL.' };
  }
  if (raw.length > 2048) return { ok: false, reason: 'url must be at most 2048 characters.' };
  if (u.protocol !== 'https:' && !(allowPrivate && u.protocol === 'http:'))
    return { ok: false, reason: 'url must use https.' };
  if (u.username || u.password) return { ok: false, reason: 'url must not carry credentials.' };
  if (!u.hostname) return { ok: false, reason: 'url must name a host.' };
  return { ok: true, url: u };
}

const PRIVATE = 'url points at a private or reserved address.';
const NEVER =
  'url points at a link-local, cloud-metadata, multicast or reserved address, which webhooks may never reach.';

/**
 * Full check at create/update time: shape, then every address the host resolves to (`resolve`: the
 * A and AAAA addresses of a name, [] when it has none). With private webhooks allowed, names are not
 * resolved here (the connect-time guard judges what they resolve to).
 */
export async function checkWebhookUrl(
  raw: string,
  allowPrivate: boolean,
  resolve: (host: string) => Promise<string[]>,
): Promise<UrlVerdict> {
  const shape = checkUrlShape(raw, allowPrivate);
  if (!shape.ok) return shape;
  const host = hostOf(shape.url!);
  if (METADATA_NAMES.test(host)) return { ok: false, reason: NEVER };
  if (isIP(host))
    return isBlockedIp(host, allowPrivate) ? { ok: false, reason: allowPrivate ? NEVER : PRIVATE } : { ok: true };
  if (allowPrivate) return { ok: true };
  if (/(^|\.)localhost\.?$/i.test(host)) return { ok: false, reason: PRIVATE };
  const addrs = await resolve(host);
  if (addrs.length === 0) return { ok: false, reason: `url host ${host} does not resolve.` };
  if (addrs.some((a) => isBlockedIp(a))) return { ok: false, reason: 'url resolves to a private or reserved address.' };
  return { ok: true };
}
