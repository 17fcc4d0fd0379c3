// DANE (RFC 7672) lookups: which MX hosts of a recipient domain get DANE-authenticated TLS. Only when the domain's MX
// RRset is DNSSEC-validated (the AD bit of the service's resolver), and per MX host when its address records and its
// TLSA RRset (`_25._tcp.<host>`) are validated too. A lookup that fails (SERVFAIL, time-out) where the answer would
// have been secure makes that host a failure (deferred): never a downgrade to plain text (KumoMTA issue 543).
// Used by the delivery loop (outbound/dane.ts) and `mta tls-policy DOMAIN` (tls-policy.ts).
import type { SecureAnswer, SecureDns, RecordType } from './secure-dns.js';
import { usableTlsa, type DaneFailure, type Tlsa } from '../core/dane.js';

/** One MX host under DANE: its usable records (none: TLS required, not authenticated), or why it must be deferred. */
export type HostDane = { kind: 'dane'; records: Tlsa[]; names: string[] } | ({ kind: 'fail' } & DaneFailure);

/** Per host, DANE or a failure (hosts DANE does not apply to are left out); null when it applies to none. */
export async function daneHosts(
  dns: SecureDns,
  domain: string,
  hosts: readonly string[],
): Promise<Record<string, HostDane> | null> {
  const mx = await answer(dns, domain, 'MX');
  if ('fail' in mx) return Object.fromEntries(hosts.map((h) => [h, mx.fail]));
  if (!mx.secure) return null;
  const out: Record<string, HostDane> = {};
  await Promise.all(
    hosts.map(async (h) => {
      const d = await hostDane(dns, h);
      if (d) out[h] = d;
    }),
  );
  return Object.keys(out).length ? out : null;
}

/** The MX hosts of a domain as its validated MX answer names them, and whether that answer is secure. */
export async function secureMxHosts(dns: SecureDns, domain: string): Promise<{ secure: boolean; hosts: string[] }> {
  const a = await dns.cached(domain, 'MX');
  const hosts = a.records.map((r) =>
    String((r as { data: { exchange: string } }).data.exchange)
      .toLowerCase()
      .replace(/\.$/, ''),
  );
  return { secure: a.secure && a.rcode === 'NOERROR', hosts: hosts.length ? hosts : [domain] };
}

/** One MX host of a secure MX RRset: DANE when its addresses and its TLSA RRset are secure, a failure when unknown. */
async function hostDane(dns: SecureDns, host: string): Promise<HostDane | null> {
  let addr = await answer(dns, host, 'A');
  if (!('fail' in addr) && addr.records.length === 0) addr = await answer(dns, host, 'AAAA');
  if ('fail' in addr) return addr.fail;
  // RFC 7672 §2.2.2: the TLSA records of a host whose address records are insecure are not used.
  if (!addr.secure) return null;
  const tlsa = await answer(dns, `_25._tcp.${host}`, 'TLSA');
  if ('fail' in tlsa) return tlsa.fail;
  if (!tlsa.secure || tlsa.records.length === 0) return null;
  const records = tlsa.records.map((r) => {
    const d = (r as { data: unknown }).data as {
      usage: number;
      selector: number;
      matchingType: number;
      certificate: Buffer;
    };
    return { usage: d.usage, selector: d.selector, matching: d.matchingType, data: d.certificate.toString('hex') };
  });
  // Secure records, none usable (PKIX-TA/PKIX-EE, unknown parameters): TLS still required, not authenticated.
  return { kind: 'dane', records: usableTlsa(records), names: [host] };
}

/** A validated lookup: the answer, or a failure (SERVFAIL, REFUSED, time-out) that must defer, not downgrade. */
async function answer(dns: SecureDns, name: string, type: RecordType): Promise<SecureAnswer | { fail: HostDane }> {
  let a: SecureAnswer;
  try {
    a = await dns.cached(name, type);
  } catch (err) {
    return fail(`dane: ${type} lookup of ${name} failed: ${(err as Error).message}`);
  }
  if (a.rcode === 'NOERROR' || a.rcode === 'NXDOMAIN') return a;
  return fail(`dane: ${type} lookup of ${name} failed: ${a.rcode}`);
}

const fail = (failure: string): { fail: HostDane } => ({
  fail: { kind: 'fail', result_type: 'dnssec-invalid', failure },
});
