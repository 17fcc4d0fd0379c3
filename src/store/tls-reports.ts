// TLS reporting counters and the reports sent (migration 033; docs/outbound.md "TLS reporting"). Upserts run inside
// the caller's transaction (the delivery loop's result batch); the report of a domain's day is a key range.
import { sql, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';

/** One counter's key: a recipient policy domain's UTC day, its policy, the session's result and hosts. */
export interface TlsCountKey {
  domain: string;
  day: number;
  policy_type: string;
  /** JSON: the policy's mode and mx patterns (sts) or TLSA records (tlsa); '' for no-policy-found */
  policy: string;
  /** '' for a successful session */
  result_type: string;
  mx_host: string;
  receiving_ip: string;
  sending_ip: string;
}
export interface TlsCountRow extends TlsCountKey {
  n: number;
}

/** Adds `n` sessions to a counter. PostgreSQL: appended to this transaction's deltas, folded at COMMIT (033). */
export function* bumpTlsCount(db: DB, k: TlsCountKey, n: number): Gen<void> {
  yield* run(
    sql(
      db,
      `INSERT INTO tls_report_counts (domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip, n)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip)
       DO UPDATE SET n = n + excluded.n`,
      `INSERT INTO tls_report_counts_delta
       (domain, day, policy_type, policy, result_type, mx_host, receiving_ip, sending_ip, n)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    k.domain,
    k.day,
    k.policy_type,
    k.policy,
    k.result_type,
    k.mx_host,
    k.receiving_ip,
    k.sending_ip,
    n,
  );
}

/** A domain's counters of one day. */
export function* tlsCountsOf(db: DB, domain: string, day: number): Gen<TlsCountRow[]> {
  const rows = yield* all(
    sql<TlsCountRow>(db, 'SELECT * FROM tls_report_counts WHERE domain = ? AND day = ? ORDER BY policy_type, policy'),
    domain,
    day,
  );
  return rows.map((r) => ({ ...r, day: Number(r.day), n: Number(r.n) }));
}

/** The domains with traffic on a day (the day index). */
export function* tlsDomainsOf(db: DB, day: number): Gen<string[]> {
  return yield* all(
    sql<string>(db, 'SELECT DISTINCT domain FROM tls_report_counts WHERE day = ? ORDER BY domain').pluck(),
    day,
  );
}

export interface TlsFailureRow {
  domain: string;
  result_type: string;
  n: number;
}
/** Failed sessions per domain and result type since `day` (the Delivery page). */
export function* tlsFailuresSince(db: DB, day: number): Gen<TlsFailureRow[]> {
  const rows = yield* all(
    sql<TlsFailureRow>(
      db,
      `SELECT domain, result_type, sum(n) AS n FROM tls_report_counts WHERE day >= ? AND result_type <> ''
       GROUP BY domain, result_type ORDER BY domain, result_type`,
    ),
    day,
  );
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}

export const tlsReportSentAt = (db: DB, domain: string, day: number) =>
  get(sql<number>(db, 'SELECT sent_at FROM tls_reports_sent WHERE domain = ? AND day = ?').pluck(), domain, day);

/** Notes a domain's day as reported; false when it already was (another node, a second run). */
export function* noteTlsReportSent(db: DB, domain: string, day: number, at: number, rua: string): Gen<boolean> {
  const r = yield* run(
    sql(
      db,
      `INSERT INTO tls_reports_sent (domain, day, sent_at, rua) VALUES (?, ?, ?, ?)
       ON CONFLICT (domain, day) DO NOTHING`,
    ),
    domain,
    day,
    at,
    rua,
  );
  return r.changes > 0;
}

/** Drops counters and sent marks of days before `day`. */
export function* pruneTlsReports(db: DB, day: number): Gen<number> {
  const a = yield* run(sql(db, 'DELETE FROM tls_report_counts WHERE day < ?'), day);
  const b = yield* run(sql(db, 'DELETE FROM tls_reports_sent WHERE day < ?'), day);
  return a.changes + b.changes;
}

export interface PolicyListRow {
  domain: string;
  mode: string;
  mx_json: string;
  expires_at: number;
  override: string | null;
}
/** Domains with a cached MTA-STS policy or an operator override (the Delivery page), at most `limit`. */
export function* tlsPolicyList(db: DB, limit: number): Gen<PolicyListRow[]> {
  const rows = yield* all(
    sql<PolicyListRow>(
      db,
      `SELECT p.domain, p.mode, p.mx_json, p.expires_at, o.mode AS override
       FROM mta_sts_policies p LEFT JOIN tls_overrides o ON o.domain = p.domain
       UNION ALL
       SELECT o.domain, '' AS mode, '[]' AS mx_json, 0 AS expires_at, o.mode AS override
       FROM tls_overrides o WHERE NOT EXISTS (SELECT 1 FROM mta_sts_policies p WHERE p.domain = o.domain)
       ORDER BY domain LIMIT ?`,
    ),
    limit,
  );
  return rows.map((r) => ({ ...r, expires_at: Number(r.expires_at) }));
}
