// DNS blocklist (DNSBL) lookups of sending IPs, pure parts (operations.md "Deliverability insight"): the query name
// (reversed octets, or reversed nibbles for IPv6, RFC 5782 §2.1/§2.4) and what an A answer means.
import { isIP } from 'node:net';

/** The name to query for `ip` in `zone`: 2.0.0.127.zone, or the 32 reversed nibbles of an IPv6 address. */
export function dnsblQueryName(ip: string, zone: string): string {
  if (isIP(ip) === 4) return `${ip.split('.').reverse().join('.')}.${zone}`;
  return `${[...expandIpv6(ip)].reverse().join('.')}.${zone}`;
}

/** The 32 hex nibbles of an IPv6 address (an embedded IPv4 tail converted). */
function expandIpv6(ip: string): string {
  let s = ip.toLowerCase();
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    s = `${s.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.split('::');
  const groups = (x: string | undefined) => (x ? x.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const fill = tail === undefined ? [] : new Array<string>(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => g.padStart(4, '0')).join('');
}

export interface Listing {
  zone: string;
  /** listed by this zone (an A answer in 127.0.0.0/8 other than 127.255.255.x) */
  listed: boolean;
  /** the first A answer, or null (NXDOMAIN, or no answer) */
  answer: string | null;
  /** the lookup failed (time-out, SERVFAIL): `listed` is the previous check's */
  error?: string;
}

/**
 * What the A answers of a DNSBL query mean: a listing when one is in 127.0.0.0/8 outside 127.255.255.0/24
 * (127.255.255.x is the zone refusing the query, e.g. from a public resolver: reported, not a listing).
 */
export function judgeDnsbl(zone: string, answers: readonly string[]): Listing {
  const listed = answers.some((a) => a.startsWith('127.') && !a.startsWith('127.255.255.'));
  return { zone, listed, answer: answers[0] ?? null };
}

export type IpHealthState = 'ok' | 'warning' | 'listed' | 'suspended' | 'unchecked';

/** listed (suspended under MTA_DNSBL_ACTION=suspend) beats warning (no FCrDNS, or a domain's SPF misses it). */
export function ipHealthState(h: { fcrdns: boolean; listings: Listing[]; spfMissing: string[] }, suspend: boolean) {
  if (h.listings.some((l) => l.listed)) return suspend ? 'suspended' : 'listed';
  return !h.fcrdns || h.spfMissing.length ? 'warning' : 'ok';
}
