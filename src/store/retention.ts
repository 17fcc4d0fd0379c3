// Deletes expired rows in bounded batches (each batch its own short transaction), so a retention
// pass never holds the write lock long. Returns how many rows went.
import { sql, tx, type DB } from './db.js';

const BATCH = 5000;

function purge(db: DB, text: string, before: number): number {
  let total = 0;
  for (;;) {
    const n = tx(db, () => sql(db, text).run(before, BATCH).changes);
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
