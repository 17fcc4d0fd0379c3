// Reports received by the inbound listener (migration 004): one row per message, with its parsed
// reading, what it did, and (capped) raw bytes when it changed nothing, for the operator.
import { sql, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';

export type ReportOutcome = 'applied' | 'duplicate' | 'ignored' | 'unmatched';
export interface InboundReportRow {
  seq: number;
  id: string;
  kind: 'dsn' | 'arf' | 'other' | 'postmaster';
  outcome: ReportOutcome;
  team_id: string | null;
  email_seq: number | null;
  email_id: string | null;
  matched_by: string | null;
  report_message_id: string | null;
  mail_from: string | null;
  rcpt_to: string;
  remote_ip: string | null;
  parsed_json: string;
  raw_size: number;
  raw: Buffer | null;
  raw_truncated: number;
  created_at: number;
}
export type NewInboundReport = Omit<InboundReportRow, 'seq'>;

const COLS =
  'id, kind, outcome, team_id, email_seq, email_id, matched_by, report_message_id, mail_from, rcpt_to, remote_ip, parsed_json, raw_size, raw, raw_truncated, created_at';

export function* insertInboundReport(db: DB, r: NewInboundReport): Gen<number> {
  const stmt = sql(
    db,
    `INSERT INTO inbound_reports (${COLS}) VALUES (${COLS.split(', ')
      .map((c) => '@' + c)
      .join(', ')})`,
  );
  return Number((yield* run(stmt, r)).lastInsertRowid);
}

/** Whether a report with this Message-ID already changed this email (the same DSN delivered twice). */
export function* reportAlreadyApplied(db: DB, emailSeq: number, messageId: string): Gen<boolean> {
  const text =
    "SELECT 1 FROM inbound_reports WHERE report_message_id = ? AND email_seq = ? AND outcome = 'applied' LIMIT 1";
  return (yield* get(sql(db, text).pluck(), messageId, emailSeq)) !== undefined;
}

export const inboundReportById = (db: DB, id: string) =>
  get(sql<InboundReportRow>(db, 'SELECT * FROM inbound_reports WHERE id = ?'), id);

/** Newest first; for the operator (and tests). */
export const listInboundReports = (db: DB, outcome: ReportOutcome | null, limit: number) =>
  all(
    sql<InboundReportRow>(
      db,
      'SELECT * FROM inbound_reports WHERE (? IS NULL OR outcome = ?) ORDER BY seq DESC LIMIT ?',
    ),
    outcome,
    outcome,
    limit,
  );
