// Presenter of the Domain API object: the five records to publish (built from the current config), then
// the other DKIM keys' records (Ed25519, next, retiring), then the DMARC report authorisation under the bounce
// domain, then (a receiving domain) its inbound MX, each with its last check. Never a private key.
import {
  checkKey,
  dkimRecord,
  expectedRecords,
  inboundMxRecord,
  reportAuthRecord,
  type CheckKey,
  type DnsRecord,
  type DomainStatus,
} from '../core/domain-records.js';
import type { Config } from '../config/schema.js';
import type { DkimKeyRow, DomainRow } from '../store/domains.js';
import { iso } from './present.js';

/** What records_json keeps per check key (the purpose; `return_path_spf` for the return-path TXT). */
export interface RecordResult {
  status: DomainStatus;
  found: string | null;
  error?: string;
}

export type KeyState = 'current' | 'next' | 'retiring';
/** DKIM records also say which key they publish and whether it signs mail right now. */
export interface DkimFields {
  state: KeyState;
  algorithm: 'rsa' | 'ed25519';
  signing: boolean;
  retire_at?: string | null;
}

export interface PresentedRecord extends DnsRecord {
  status: DomainStatus;
  found?: string | null;
  expected?: string;
  error?: string | null;
  state?: KeyState;
  algorithm?: 'rsa' | 'ed25519';
  signing?: boolean;
  retire_at?: string | null;
}

function withResult(r: DnsRecord, res: RecordResult | undefined): PresentedRecord {
  const status = res?.status ?? 'pending';
  const wrong = res && (res.status !== 'verified' || res.error);
  return { ...r, status, ...(wrong ? { found: res.found ?? null, expected: r.value, error: res.error ?? null } : {}) };
}

function keyRecord(d: DomainRow, k: DkimKeyRow): PresentedRecord {
  const state: KeyState = k.role === 'ed25519' ? 'current' : k.role;
  const signing = k.role === 'ed25519' && d.status === 'verified' && k.status === 'verified';
  const res: RecordResult = { status: k.status, found: k.found, ...(k.error ? { error: k.error } : {}) };
  const checked = k.status !== 'pending' || !!k.error;
  return {
    ...withResult(dkimRecord(d.name, k.selector, k.algorithm, k.public_key), checked ? res : undefined),
    state,
    algorithm: k.algorithm,
    signing,
    ...(k.role === 'retiring' ? { retire_at: iso(k.retire_at) } : {}),
  };
}

export function presentDomain(
  d: DomainRow,
  config: Pick<Config, 'sendingIps' | 'hostname' | 'bounceDomain'>,
  keys: DkimKeyRow[] = [],
) {
  const results: Partial<Record<CheckKey, RecordResult>> = d.records_json ? JSON.parse(d.records_json) : {};
  const records: PresentedRecord[] = expectedRecords({
    name: d.name,
    selector: d.dkim_selector,
    publicKey: d.dkim_public_key,
    algorithm: d.dkim_algorithm,
    returnPath: d.return_path ?? `bounces.${d.name}`,
    sendingIps: config.sendingIps,
    hostname: config.hostname,
    bounceDomain: config.bounceDomain,
  }).map((r) => withResult(r, results[checkKey(r)]));
  const algorithm = d.dkim_algorithm === 'ed25519' ? 'ed25519' : 'rsa';
  Object.assign(records[0], { state: 'current', algorithm, signing: d.status === 'verified' } satisfies DkimFields);
  records.push(...keys.map((k) => keyRecord(d, k)));
  const auth = reportAuthRecord(d.name, config.bounceDomain);
  records.push(withResult(auth, results[checkKey(auth)]));
  if (d.receiving === 1) records.push(withResult(inboundMxRecord(d.name, config.hostname), results.inbound_mx));
  return {
    object: 'domain' as const,
    id: d.id,
    name: d.name,
    status: d.status,
    receiving: d.receiving === 1,
    records,
    created_at: iso(d.created_at)!,
    last_checked_at: iso(d.last_checked_at),
  };
}
export type Domain = ReturnType<typeof presentDomain>;
