// Connect-time SSRF guard for webhook POSTs: a `lookup` that resolves the host and refuses what
// core/webhook-address.ts blocks, so the connection goes to the address that was checked.
import dns from 'node:dns';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import type { Resolver } from 'node:dns/promises';
import { isBlockedIp, METADATA_NAMES } from '../core/webhook-address.js';

export { isBlockedIp };

/** The A and AAAA addresses of a name; a lookup failure other than "no such name / no such record" is thrown (it may pass). */
async function resolveOrThrow(resolver: Resolver, host: string): Promise<string[]> {
  const absent = (err: { code?: string }) => {
    if (err.code === 'ENOTFOUND' || err.code === 'ENODATA') return [] as string[];
    throw err;
  };
  const [a, aaaa] = await Promise.allSettled([
    resolver.resolve4(host).catch(absent),
    resolver.resolve6(host).catch(absent),
  ]);
  const got = [a, aaaa].flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  const failed = [a, aaaa].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (got.length === 0 && failed) throw failed.reason;
  return got;
}

/** The system resolver (hosts file, search domains), as private deployments expect for their own names. */
function systemLookup(host: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    dns.lookup(host, { all: true }, (err, addrs) => (err ? reject(err) : resolve(addrs.map((a) => a.address)))),
  );
}

/**
 * A `lookup` for http(s).request that resolves and refuses blocked addresses, so the connection goes to
 * the address that was checked (no DNS rebinding). Without `allowPrivate` it resolves with the configured
 * resolver and refuses every private address; with it, the system resolver, refusing only the always-blocked ones.
 */
export function guardedLookup(resolver: Resolver, allowPrivate = false): LookupFunction {
  return (hostname, options, callback) => {
    const cb = callback as (
      err: Error | null,
      address: string | { address: string; family: number }[],
      family?: number,
    ) => void;
    const host = hostname.replace(/^\[|\]$/g, '');
    const fail = (msg: string, code: string) => cb(Object.assign(new Error(msg), { code }), '', 0);
    const done = (addrs: string[]) => {
      const ok = addrs.filter((a) => !isBlockedIp(a, allowPrivate));
      // Not resolving (now) is a connection error that may pass: retried. Only a blocked address is final.
      if (addrs.length === 0) return fail(`${host} does not resolve`, 'ENOTFOUND');
      if (ok.length !== addrs.length)
        return fail(
          `${host} resolves to a ${allowPrivate ? 'link-local, metadata or reserved' : 'private or reserved'} address`,
          'EBLOCKED',
        );
      if (options.all)
        return cb(
          null,
          ok.map((a) => ({ address: a, family: net.isIP(a) })),
        );
      cb(null, ok[0], net.isIP(ok[0]));
    };
    if (METADATA_NAMES.test(host)) return fail(`${host} is a cloud metadata service`, 'EBLOCKED');
    if (net.isIP(host)) return done([host]);
    const lookup = allowPrivate ? systemLookup(host) : resolveOrThrow(resolver, host);
    lookup.then(done, (err: Error & { code?: string }) => fail(`${host}: ${err.message}`, err.code ?? 'EAI_AGAIN'));
  };
}
