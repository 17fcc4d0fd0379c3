// Presenter of the Domain API object: the four records to publish (built from the current config) and
// each record's last check result. Pure mapping; never includes the private key.
import { expectedRecords, type DomainStatus, type Purpose } from '../core/domain-records.js';
import type { Config } from '../config/schema.js';
import type { DomainRow } from '../store/domains.js';
import { iso } from './present.js';

/** What records_json keeps per purpose. */
export interface RecordResult { status: DomainStatus; found: string | null; error?: string }

export function presentDomain(d: DomainRow, config: Pick<Config, 'sendingIps' | 'hostname'>) {
  const results: Partial<Record<Purpose, RecordResult>> = d.records_json ? JSON.parse(d.records_json) : {};
  const records = expectedRecords({
    name: d.name, selector: d.dkim_selector, publicKey: d.dkim_public_key, algorithm: d.dkim_algorithm,
    returnPath: d.return_path ?? `bounces.${d.name}`, sendingIps: config.sendingIps, hostname: config.hostname,
  }).map((r) => {
    const res = results[r.purpose];
    const status = res?.status ?? 'pending';
    const wrong = res && (res.status !== 'verified' || res.error);
    return { ...r, status, ...(wrong ? { found: res.found ?? null, expected: r.value, error: res.error ?? null } : {}) };
  });
  return {
    object: 'domain' as const, id: d.id, name: d.name, status: d.status, records,
    created_at: iso(d.created_at)!, last_checked_at: iso(d.last_checked_at),
  };
}
export type Domain = ReturnType<typeof presentDomain>;
