// DMARC aggregate reports (migration 023): one row per (org_name, report_id) for a team's domain, and its records.
import { sql, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';

export interface DmarcReportRow {
  seq: number;
  id: string;
  team_id: string;
  domain_id: string;
  domain: string;
  org_name: string;
  email: string | null;
  report_id: string;
  begin_at: number;
  end_at: number;
  records: number;
  messages: number;
  schema: string;
  generator: string | null;
  policy_json: string;
  errors_json: string | null;
  remote_ip: string | null;
  received_at: number;
  /** 1 vouched for (DKIM or SPF aligned with the reporter's address), 0 not, null stored before the check (035) */
  authenticated: number | null;
  authenticated_by: string | null;
}
export type NewDmarcReport = Omit<DmarcReportRow, 'seq'>;

export interface DmarcRecordRow {
  seq: number;
  report_seq: number;
  source_ip: string;
  count: number;
  disposition: string | null;
  dkim_aligned: number;
  spf_aligned: number;
  dmarc_pass: number;
  header_from: string | null;
  envelope_from: string | null;
  /** {dkim: [{domain, selector, result}], spf: [{domain, scope, result}], reasons, envelope_to} */
  auth_json: string;
}
export type NewDmarcRecord = Omit<DmarcRecordRow, 'seq' | 'report_seq'>;

const REPORT_COLS =
  'id, team_id, domain_id, domain, org_name, email, report_id, begin_at, end_at, records, messages, schema, generator, policy_json, errors_json, remote_ip, received_at, authenticated, authenticated_by';
const RECORD_COLS =
  'report_seq, source_ip, count, disposition, dkim_aligned, spf_aligned, dmarc_pass, header_from, envelope_from, auth_json';
const params = (cols: string) =>
  cols
    .split(', ')
    .map((c) => '@' + c)
    .join(', ');

/** The stored report of this organisation with this id, if any (reports are stored once). */
export const dmarcReportByOrgId = (db: DB, orgName: string, reportId: string) =>
  get(sql<DmarcReportRow>(db, 'SELECT * FROM dmarc_reports WHERE org_name = ? AND report_id = ?'), orgName, reportId);

/** Inserts a report and its records (call inside a transaction, after dmarcReportByOrgId found none); its seq. */
export function* insertDmarcReport(db: DB, r: NewDmarcReport, records: NewDmarcRecord[]): Gen<number> {
  const seq = Number(
    (yield* run(sql(db, `INSERT INTO dmarc_reports (${REPORT_COLS}) VALUES (${params(REPORT_COLS)})`), r))
      .lastInsertRowid,
  );
  const stmt = sql(db, `INSERT INTO dmarc_records (${RECORD_COLS}) VALUES (${params(RECORD_COLS)})`);
  for (const rec of records) yield* run(stmt, { ...rec, report_seq: seq });
  return seq;
}

/** Removes a report and its records (an unauthenticated one an authenticated report with its org and id replaces). */
export const deleteDmarcReport = (db: DB, seq: number) => run(sql(db, 'DELETE FROM dmarc_reports WHERE seq = ?'), seq);

export const dmarcReportById = (db: DB, id: string) =>
  get(sql<DmarcReportRow>(db, 'SELECT * FROM dmarc_reports WHERE id = ?'), id);

export const dmarcRecordsOf = (db: DB, reportSeq: number) =>
  all(sql<DmarcRecordRow>(db, 'SELECT * FROM dmarc_records WHERE report_seq = ? ORDER BY seq'), reportSeq);

/** A domain's reports whose date range begins in [from, to), newest first; `before` is a seq (cursor). */
export const dmarcReportsOfDomain = (
  db: DB,
  domainId: string,
  from: number,
  to: number,
  before: number | null,
  limit: number,
) =>
  all(
    sql<DmarcReportRow>(
      db,
      `SELECT * FROM dmarc_reports WHERE domain_id = ? AND begin_at >= ? AND begin_at < ? AND (? IS NULL OR seq < ?)
     ORDER BY seq DESC LIMIT ?`,
    ),
    domainId,
    from,
    to,
    before,
    before,
    limit,
  );

/**
 * Which reports a summary counts: not those known unauthenticated (authenticated = 0: nothing aligned with the
 * reporter vouched for the message, so anyone could have written it); NULL, a report stored before the check
 * existed, still counts.
 */
const VOUCHED = 'coalesce(r.authenticated, 1) = 1';

/**
 * The reports of a domain whose range begins in [from, to) that a summary counts: how many, and the messages they
 * stand for; and how many unauthenticated ones it leaves out.
 */
export function* dmarcReportTotals(db: DB, domainId: string, from: number, to: number) {
  const stmt = sql<{ reports: number | null; messages: number | null; unauthenticated: number | null }>(
    db,
    `SELECT sum(CASE WHEN ${VOUCHED} THEN 1 ELSE 0 END) AS reports,
     sum(CASE WHEN ${VOUCHED} THEN r.messages ELSE 0 END) AS messages,
     sum(CASE WHEN ${VOUCHED} THEN 0 ELSE 1 END) AS unauthenticated FROM dmarc_reports r
     WHERE r.domain_id = ? AND r.begin_at >= ? AND r.begin_at < ?`,
  );
  return (yield* get(stmt, domainId, from, to))!;
}

/** Sums of one (source IP, reporter) pair's records: messages, and those passing / aligned / by disposition. */
export interface DmarcSourceRow {
  source_ip: string;
  org_name: string;
  messages: number;
  dmarc_pass: number;
  dkim_aligned: number;
  spf_aligned: number;
  disp_none: number;
  disp_quarantine: number;
  disp_reject: number;
}

/**
 * The records of a domain's counted reports (VOUCHED) beginning in [from, to), summed per source IP and reporting organisation (the
 * pairs are few next to the records: the service folds them into one entry per source).
 */
export const dmarcSources = (db: DB, domainId: string, from: number, to: number) =>
  all(
    sql<DmarcSourceRow>(
      db,
      `SELECT c.source_ip AS source_ip, r.org_name AS org_name, sum(c.count) AS messages,
       sum(c.count * c.dmarc_pass) AS dmarc_pass, sum(c.count * c.dkim_aligned) AS dkim_aligned,
       sum(c.count * c.spf_aligned) AS spf_aligned,
       sum(CASE WHEN c.disposition = 'quarantine' OR c.disposition = 'reject' THEN 0 ELSE c.count END) AS disp_none,
       sum(CASE WHEN c.disposition = 'quarantine' THEN c.count ELSE 0 END) AS disp_quarantine,
       sum(CASE WHEN c.disposition = 'reject' THEN c.count ELSE 0 END) AS disp_reject
     FROM dmarc_reports r JOIN dmarc_records c ON c.report_seq = r.seq
     WHERE r.domain_id = ? AND r.begin_at >= ? AND r.begin_at < ? AND ${VOUCHED}
     GROUP BY c.source_ip, r.org_name`,
    ),
    domainId,
    from,
    to,
  );

/** Messages and DMARC passes per UTC day (ms of the day's start) of the counted reports beginning in [from, to). */
export const dmarcDays = (db: DB, domainId: string, from: number, to: number) =>
  all(
    sql<{ day: number; messages: number; dmarc_pass: number }>(
      db,
      `SELECT (r.begin_at / 86400000) * 86400000 AS day, sum(c.count) AS messages,
       sum(c.count * c.dmarc_pass) AS dmarc_pass
     FROM dmarc_reports r JOIN dmarc_records c ON c.report_seq = r.seq
     WHERE r.domain_id = ? AND r.begin_at >= ? AND r.begin_at < ? AND ${VOUCHED}
     GROUP BY (r.begin_at / 86400000) ORDER BY 1`,
    ),
    domainId,
    from,
    to,
  );
