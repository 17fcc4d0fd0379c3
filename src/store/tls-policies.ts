// Recipient domains' cached MTA-STS policies and the operator's TLS overrides (migration 030; docs/outbound.md
// "Transport security").
import { sql, type DB } from './db.js';
import { get, run, type Gen } from './op.js';

export interface StsPolicyRow {
  domain: string;
  policy_id: string;
  mode: string;
  mx_json: string;
  max_age: number;
  fetched_at: number;
  expires_at: number;
}
export interface TlsOverrideRow {
  domain: string;
  mode: string;
  set_at: number;
}

export function* stsPolicyOf(db: DB, domain: string): Gen<StsPolicyRow | undefined> {
  return yield* get(sql<StsPolicyRow>(db, 'SELECT * FROM mta_sts_policies WHERE domain = ?'), domain);
}

export function* saveStsPolicy(db: DB, r: StsPolicyRow): Gen<void> {
  yield* run(
    sql(
      db,
      `INSERT INTO mta_sts_policies (domain, policy_id, mode, mx_json, max_age, fetched_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (domain) DO UPDATE SET policy_id = excluded.policy_id, mode = excluded.mode,
         mx_json = excluded.mx_json, max_age = excluded.max_age, fetched_at = excluded.fetched_at,
         expires_at = excluded.expires_at`,
    ),
    r.domain,
    r.policy_id,
    r.mode,
    r.mx_json,
    r.max_age,
    r.fetched_at,
    r.expires_at,
  );
}

export function* tlsOverrideOf(db: DB, domain: string): Gen<TlsOverrideRow | undefined> {
  return yield* get(sql<TlsOverrideRow>(db, 'SELECT * FROM tls_overrides WHERE domain = ?'), domain);
}

export function* setTlsOverride(db: DB, domain: string, mode: string, now: number): Gen<void> {
  yield* run(
    sql(
      db,
      `INSERT INTO tls_overrides (domain, mode, set_at) VALUES (?, ?, ?)
       ON CONFLICT (domain) DO UPDATE SET mode = excluded.mode, set_at = excluded.set_at`,
    ),
    domain,
    mode,
    now,
  );
}

export function* clearTlsOverride(db: DB, domain: string): Gen<boolean> {
  return (yield* run(sql(db, 'DELETE FROM tls_overrides WHERE domain = ?'), domain)).changes > 0;
}
