// Pure rules of sending domains: name validation, the DNS records a domain must publish, reading
// published DKIM/DMARC/SPF results, and the domain status (and return-path use) a set of results implies.
import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';

export type DomainStatus = 'pending' | 'verified' | 'failed';
export type Purpose = 'dkim' | 'spf' | 'dmarc' | 'return_path' | 'dmarc_report_auth' | 'inbound_mx';
export const PURPOSES: Purpose[] = ['dkim', 'spf', 'dmarc', 'return_path', 'dmarc_report_auth', 'inbound_mx'];
/** Records that must all pass for a domain to be `verified` (docs/domains.md). */
export type RequiredPurpose = 'dkim' | 'spf' | 'dmarc';
export const REQUIRED: RequiredPurpose[] = ['dkim', 'spf', 'dmarc'];
/**
 * What a check result is stored under: the record's purpose, except that the return path has two
 * records: its MX (`return_path`) and the SPF TXT at the same name (`return_path_spf`).
 */
export type CheckKey = Purpose | 'return_path_spf';
export const CHECK_KEYS: CheckKey[] = [
  'dkim',
  'spf',
  'dmarc',
  'return_path',
  'return_path_spf',
  'dmarc_report_auth',
  'inbound_mx',
];

export interface DnsRecord {
  purpose: Purpose;
  type: 'TXT' | 'MX';
  name: string;
  value: string;
}
/** Outcome of one record's check: pass, fail (definitive), or error (DNS trouble: inconclusive). */
export type CheckOutcome =
  | { result: 'pass'; found: string | null }
  | { result: 'fail'; found: string | null; error: string }
  | { result: 'error'; error: string };

/** Lower-cased ASCII (punycode) form of a domain name, or null when it is not a valid domain. */
export function normaliseDomain(raw: string): string | null {
  const trimmed = raw.trim().replace(/\.$/, '');
  if (!trimmed || trimmed.length > 253 || isIP(trimmed) || /[\s@/:]/.test(trimmed)) return null;
  const ascii = domainToASCII(trimmed.toLowerCase());
  if (!ascii || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2) return null;
  const ok = labels.every((l) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(l));
  if (!ok || /^\d+$/.test(labels[labels.length - 1])) return null;
  return ascii;
}

/** A DKIM selector that names the key and the day it was made: `mta20250131x7k2`. */
export function selectorFor(nowMs: number, suffix: string): string {
  const d = new Date(nowMs).toISOString().slice(0, 10).replace(/-/g, '');
  return `mta${d}${suffix}`.toLowerCase();
}

/** SPF mechanisms for the configured sending IPs (CIDRs allowed); `a:<hostname>` when none are set. */
export function spfMechanisms(sendingIps: string[], hostname: string): string[] {
  if (!sendingIps.length) return [`a:${hostname}`];
  return sendingIps.map((s) => {
    const ip = s.split('/')[0];
    if (isIP(ip) === 4) return `ip4:${s}`;
    if (isIP(ip) === 6) return `ip6:${s}`;
    return s; // already a mechanism, e.g. include:_spf.example.net
  });
}

/** The addresses to evaluate SPF for: the configured IPs (base address of a CIDR); [] = resolve the hostname. */
export function spfTestIps(sendingIps: string[]): string[] {
  return sendingIps.map((s) => s.split('/')[0]).filter((ip) => isIP(ip) !== 0);
}

export interface RecordInput {
  name: string;
  selector: string;
  publicKey: string;
  algorithm: string;
  returnPath: string;
  sendingIps: string[];
  hostname: string;
  /** MTA_BOUNCE_DOMAIN: where aggregate reports are sent (`rua=mailto:dmarc@<bounce domain>`) */
  bounceDomain: string;
}

/** How long a rotated-out DKIM key stays listed (its TXT record should stay published): 7 days. */
export const RETIRE_GRACE_MS = 7 * 24 * 3600 * 1000;

/** The DKIM TXT record of one key (Ed25519 keys: p= is the raw 32-byte key, RFC 8463). */
export function dkimRecord(domain: string, selector: string, algorithm: string, publicKey: string): DnsRecord {
  return {
    purpose: 'dkim',
    type: 'TXT',
    name: `${selector}._domainkey.${domain}`,
    value: `v=DKIM1; k=${algorithm === 'ed25519' ? 'ed25519' : 'rsa'}; p=${publicKey}`,
  };
}

/**
 * The five records to publish, in a stable order: DKIM, SPF, DMARC, return-path MX (records[0..3], as
 * before), then the SPF TXT at the return-path name, which receivers evaluate for the VERP MAIL FROM.
 */
export function expectedRecords(i: RecordInput): DnsRecord[] {
  const spf = `v=spf1 ${spfMechanisms(i.sendingIps, i.hostname).join(' ')} ~all`;
  return [
    dkimRecord(i.name, i.selector, i.algorithm, i.publicKey),
    { purpose: 'spf', type: 'TXT', name: i.name, value: spf },
    {
      purpose: 'dmarc',
      type: 'TXT',
      name: `_dmarc.${i.name}`,
      value: `v=DMARC1; p=none; adkim=r; aspf=r; rua=mailto:${dmarcReportAddress(i.bounceDomain)}`,
    },
    { purpose: 'return_path', type: 'MX', name: i.returnPath, value: `10 ${i.hostname}` },
    { purpose: 'return_path', type: 'TXT', name: i.returnPath, value: spf },
  ];
}

/** Where receivers send a domain's DMARC aggregate reports: the inbound listener's `dmarc@` (docs/deliverability.md). */
export const dmarcReportAddress = (bounceDomain: string) => `dmarc@${bounceDomain.toLowerCase()}`;

/**
 * The record that lets `rua` point outside the domain (RFC 7489 §7.1): TXT `<domain>._report._dmarc.<bounce
 * domain>` = `v=DMARC1`, published by whoever runs the bounce domain. Listed after every DKIM record, so the
 * documented places of the others (records[0..4], extra keys from records[5]) are kept.
 */
export function reportAuthRecord(domain: string, bounceDomain: string): DnsRecord {
  return {
    purpose: 'dmarc_report_auth',
    type: 'TXT',
    name: `${domain}._report._dmarc.${bounceDomain.toLowerCase()}`,
    value: 'v=DMARC1',
  };
}

/** A receiving domain's MX (operations.md "Receiving email at a team's domains"): `<domain> MX 10 <MTA_HOSTNAME>`. */
export function inboundMxRecord(domain: string, hostname: string): DnsRecord {
  return { purpose: 'inbound_mx', type: 'MX', name: domain, value: `10 ${hostname}` };
}

/** The report authorisation passes when a TXT at its name starts with `v=DMARC1` (RFC 7489 §7.1). */
export function judgeReportAuth(values: string[]): CheckOutcome {
  const found = values.length ? values.join(' | ') : null;
  if (values.some((v) => /^v\s*=\s*DMARC1\s*(;|$)/i.test(v.trim()))) return { result: 'pass', found };
  return {
    result: 'fail',
    found,
    error: found
      ? 'No v=DMARC1 record at this name: receivers will not send aggregate reports to the bounce domain.'
      : 'No TXT record at this name: receivers will not send aggregate reports to the bounce domain.',
  };
}

/** The key a record's check result is stored under (the return-path TXT has its own). */
export function checkKey(r: Pick<DnsRecord, 'purpose' | 'type'>): CheckKey {
  return r.purpose === 'return_path' && r.type === 'TXT' ? 'return_path_spf' : r.purpose;
}

/** Tag list of a DKIM or DMARC record (`k=v; k=v`), keys lower-cased; null when malformed. */
export function parseTags(txt: string): Map<string, string> | null {
  const tags = new Map<string, string>();
  for (const part of txt.split(';')) {
    if (!part.trim()) continue;
    const eq = part.indexOf('=');
    if (eq < 1) return null;
    tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return tags;
}

const noWs = (s: string) => s.replace(/\s+/g, '');

/** Reads the TXT values at the DKIM name (each already joined from its strings) against our key. */
export function judgeDkim(values: string[], publicKey: string): CheckOutcome {
  const keys = values.map((v) => parseTags(v)).filter((t): t is Map<string, string> => !!t && t.has('p'));
  const found = values.length ? values.join(' | ') : null;
  if (!keys.length)
    return {
      result: 'fail',
      found,
      error: found ? 'No DKIM key record (p=) at this name.' : 'No TXT record at this name.',
    };
  if (keys.some((t) => noWs(t.get('p')!) === noWs(publicKey) && (t.get('v') ?? 'DKIM1') === 'DKIM1'))
    return { result: 'pass', found };
  if (keys.some((t) => t.get('p') === ''))
    return { result: 'fail', found, error: 'The published DKIM key is revoked (empty p=).' };
  return { result: 'fail', found, error: "The published DKIM public key does not match this domain's key." };
}

/** A DMARC record must be the only `v=DMARC1` TXT at _dmarc.<domain> and carry a valid p= policy. */
export function judgeDmarc(values: string[]): CheckOutcome {
  const dmarc = values.filter((v) => /^v\s*=\s*DMARC1\s*(;|$)/i.test(v.trim()));
  const found = values.length ? values.join(' | ') : null;
  if (!dmarc.length)
    return { result: 'fail', found, error: found ? 'No v=DMARC1 record at this name.' : 'No TXT record at this name.' };
  if (dmarc.length > 1)
    return { result: 'fail', found, error: 'More than one DMARC record: receivers ignore them all.' };
  const tags = parseTags(dmarc[0]);
  if (!tags)
    return {
      result: 'fail',
      found,
      error: 'The DMARC record cannot be parsed (expected tag=value pairs separated by ;).',
    };
  if (!['none', 'quarantine', 'reject'].includes((tags.get('p') ?? '').toLowerCase()))
    return { result: 'fail', found, error: 'The DMARC record needs p=none, p=quarantine or p=reject.' };
  return { result: 'pass', found: dmarc[0] };
}

/** The return-path name passes when one of its MX hosts is our inbound listener's hostname. */
export function judgeReturnPath(mx: { exchange: string; priority: number }[], hostname: string): CheckOutcome {
  const found = mx.length ? mx.map((m) => `${m.priority} ${m.exchange}`).join(', ') : null;
  const ours = hostname.toLowerCase().replace(/\.$/, '');
  if (mx.some((m) => m.exchange.toLowerCase().replace(/\.$/, '') === ours)) return { result: 'pass', found };
  return { result: 'fail', found, error: found ? `No MX record points to ${ours}.` : 'No MX record at this name.' };
}

/**
 * One sending IP's SPF result (mailauth's status.result) as a check outcome: only `pass` passes;
 * `temperror` is DNS trouble (inconclusive); `none` means no v=spf1 record at the name.
 */
export function judgeSpf(result: string, ip: string, found: string | null, comment?: string): CheckOutcome {
  if (result === 'pass') return { result: 'pass', found };
  if (result === 'temperror')
    return {
      result: 'error',
      error: `SPF evaluation hit a DNS error (${comment ?? 'temperror'}); keeping the previous status.`,
    };
  if (result === 'none') return { result: 'fail', found, error: 'No SPF record (v=spf1) at this name.' };
  return { result: 'fail', found, error: `SPF evaluates to ${result} for ${ip}; the record must authorise it.` };
}

/**
 * Whether VERP may use the domain's return-path name: its MX reaches us AND SPF passes there for the
 * sending IPs (receivers evaluate SPF on the MAIL FROM domain). Statuses are the stored ones, so a
 * DNS error on either keeps the previous answer.
 */
export function returnPathVerified(results: Partial<Record<CheckKey, { status: DomainStatus }>>): boolean {
  return results.return_path?.status === 'verified' && results.return_path_spf?.status === 'verified';
}

/**
 * The domain status after a check. Required records all passing → verified; a required record failing
 * definitively → failed if the domain was verified (or already failed), else it stays pending;
 * anything inconclusive (DNS errors) keeps the current status.
 */
export function nextDomainStatus(current: DomainStatus, outcomes: Record<RequiredPurpose, CheckOutcome>): DomainStatus {
  const req = REQUIRED.map((p) => outcomes[p].result);
  if (req.every((r) => r === 'pass')) return 'verified';
  if (req.includes('fail')) return current === 'pending' ? 'pending' : 'failed';
  return current;
}
