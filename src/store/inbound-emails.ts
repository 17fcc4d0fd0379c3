// Mail received at a team's domains (migration 031): inbound_emails (the reading in parsed_json, the raw message until
// the retention clears it) and inbound_attachments (bytes by position). Read by team, newest first.
import { sql, type DB } from './db.js';
import { all, get, run, transaction, type Gen } from './op.js';

export interface InboundEmailRow {
  seq: number;
  id: string;
  team_id: string;
  domain_id: string;
  received_at: number;
  mail_from: string | null;
  rcpt_to: string;
  remote_ip: string | null;
  size: number;
  email_id: string | null;
  parsed_json: string;
  content_expired_at: number | null;
}
const COLS =
  'seq, id, team_id, domain_id, received_at, mail_from, rcpt_to, remote_ip, size, email_id, parsed_json, content_expired_at';

export type NewInboundEmail = Omit<InboundEmailRow, 'seq' | 'content_expired_at'> & { raw: Buffer };

/** Inserts a received message and its attachments' bytes (call inside a transaction). */
export function* insertInboundEmail(db: DB, row: NewInboundEmail, attachments: Uint8Array[]): Gen<number> {
  const r = yield* run(
    sql(
      db,
      `INSERT INTO inbound_emails (id, team_id, domain_id, received_at, mail_from, rcpt_to, remote_ip, size, email_id, parsed_json, raw)
    VALUES (@id, @team_id, @domain_id, @received_at, @mail_from, @rcpt_to, @remote_ip, @size, @email_id, @parsed_json, @raw)`,
    ),
    row,
  );
  const seq = Number(r.lastInsertRowid);
  const put = sql(db, 'INSERT INTO inbound_attachments (inbound_seq, n, content) VALUES (?, ?, ?)');
  for (let n = 0; n < attachments.length; n++) yield* run(put, seq, n, Buffer.from(attachments[n]));
  return seq;
}

/** Newest first; `before` is the seq of the last row of the previous page. Fetches limit + 1 rows. */
export const inboundEmailsOfTeam = (db: DB, teamId: string, before: number | null, limit: number) =>
  all(
    sql<InboundEmailRow>(
      db,
      `SELECT ${COLS} FROM inbound_emails WHERE team_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
    ),
    teamId,
    before ?? Number.MAX_SAFE_INTEGER,
    limit + 1,
  );

export const inboundEmailById = (db: DB, teamId: string, id: string): Gen<InboundEmailRow | undefined> =>
  get(sql<InboundEmailRow>(db, `SELECT ${COLS} FROM inbound_emails WHERE id = ? AND team_id = ?`), id, teamId);

export function* inboundRaw(db: DB, seq: number): Gen<Buffer | null> {
  const r = yield* get(sql<{ raw: Buffer | null }>(db, 'SELECT raw FROM inbound_emails WHERE seq = ?'), seq);
  return r?.raw ?? null;
}

export function* inboundAttachment(db: DB, seq: number, n: number): Gen<Buffer | null> {
  const r = yield* get(
    sql<{ content: Buffer | null }>(db, 'SELECT content FROM inbound_attachments WHERE inbound_seq = ? AND n = ?'),
    seq,
    n,
  );
  return r?.content ?? null;
}

/** Our email (of the team, live) whose id is one of `ids`: the first of them that exists, in the order given. */
export function* liveEmailAmong(db: DB, teamId: string, ids: string[]): Gen<string | null> {
  const one = sql<{ id: string }>(db, 'SELECT id FROM emails WHERE id = ? AND team_id = ? AND test_mode = 0');
  for (const id of ids) if (yield* get(one, id, teamId)) return id;
  return null;
}

/**
 * Clears the raw message and the attachment bytes of mail received at `before` or earlier (the row stays, with
 * content_expired_at = at). Batches of 500 rows; returns how many messages lost their content.
 */
export function* purgeInboundContentBefore(db: DB, before: number, at: number): Gen<number> {
  const pick = sql<{ seq: number }>(
    db,
    'SELECT seq FROM inbound_emails WHERE received_at <= ? AND content_expired_at IS NULL ORDER BY received_at LIMIT 500',
  );
  const clearAttachments = sql(db, 'UPDATE inbound_attachments SET content = NULL WHERE inbound_seq = ?');
  const clearRaw = sql(db, 'UPDATE inbound_emails SET raw = NULL, content_expired_at = ? WHERE seq = ?');
  let total = 0;
  for (;;) {
    const n = yield* transaction(db, function* () {
      const rows = yield* all(pick, before);
      for (const r of rows) {
        yield* run(clearAttachments, r.seq);
        yield* run(clearRaw, at, r.seq);
      }
      return rows.length;
    });
    total += n;
    if (n < 500) return total;
  }
}
