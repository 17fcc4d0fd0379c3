// Deletes expired rows in bounded batches (each batch its own short transaction), so a retention
// pass never holds the write lock long. Returns how many rows went.
import { isPg, pgArray, PLAN_EACH_TIME, sql, type DB } from './db.js';
import { all, run, transaction, type Gen } from './op.js';

const BATCH = 5000;

function* purge(db: DB, text: string, before: number): Gen<number> {
  let total = 0;
  for (;;) {
    const n = yield* transaction(db, function* () {
      return (yield* run(sql(db, text), before, BATCH)).changes;
    });
    total += n;
    if (n < BATCH) return total;
  }
}

export const purgeIdempotencyBefore = (db: DB, before: number) =>
  purge(
    db,
    'DELETE FROM idempotency WHERE (team_id, key) IN (SELECT team_id, key FROM idempotency WHERE created_at <= ? LIMIT ?)',
    before,
  );

export const purgeInboundReportsBefore = (db: DB, before: number) =>
  purge(
    db,
    'DELETE FROM inbound_reports WHERE seq IN (SELECT seq FROM inbound_reports WHERE created_at <= ? LIMIT ?)',
    before,
  );

/** The FINAL statuses of core/status.ts, written as migration 022's index condition is (the index needs the same text). */
const FINAL_SQL = "status IN ('delivered', 'bounced', 'complained', 'failed', 'canceled')";

/**
 * Deletes the content of `testMode` emails final since `before` or earlier: html and text, the submitted message,
 * attachment bytes, the raw copy of reports about them; marks them `content_expired_at = at`. The rows, events and
 * attachment lists stay. Batches of BATCH emails, each its own transaction, read from the head of the
 * emails_content_expiry index (migration 022). Returns how many emails lost their content.
 */
export function* purgeContentBefore(db: DB, testMode: boolean, before: number, at: number): Gen<number> {
  const pick = sql<number>(
    db,
    `SELECT seq FROM emails WHERE test_mode = ? AND updated_at <= ? AND content_expired_at IS NULL AND ${FINAL_SQL} LIMIT ?`,
    `${PLAN_EACH_TIME} SELECT seq FROM emails WHERE test_mode = ? AND updated_at <= ? AND content_expired_at IS NULL AND ${FINAL_SQL} LIMIT ?`,
  ).pluck();
  const each = (text: string) =>
    sql(
      db,
      text.replace('@list', 'IN (SELECT value FROM json_each(@ids))'),
      `${PLAN_EACH_TIME} ${text.replace('@list', '= ANY(@ids::bigint[])')}`,
    );
  const writes = [
    'DELETE FROM email_messages WHERE email_seq @list',
    'DELETE FROM email_attachments WHERE email_seq @list',
    'UPDATE inbound_reports SET raw = NULL WHERE email_seq @list AND raw IS NOT NULL',
    'UPDATE emails SET html = NULL, text = NULL, content_expired_at = @at WHERE seq @list',
  ];
  let total = 0;
  for (;;) {
    const n = yield* transaction(db, function* () {
      const seqs = yield* all(pick, testMode ? 1 : 0, before, BATCH);
      if (seqs.length === 0) return 0;
      const ids = isPg(db) ? pgArray(seqs) : JSON.stringify(seqs);
      for (const text of writes) yield* run(each(text), { ids, at });
      return seqs.length;
    });
    total += n;
    if (n < BATCH) return total;
  }
}
