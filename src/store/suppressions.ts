// The per-team suppression list; addresses are stored lower-cased (core/address suppressionKey).
import { sql, type DB } from './db.js';
import { all, get, getLater, run, type Gen, type Later } from './op.js';

export interface SuppressionRow {
  seq: number;
  team_id: string;
  address: string;
  reason: 'hard_bounce' | 'complaint' | 'manual';
  email_id: string | null;
  created_at: number;
}

/**
 * Whether the team suppresses `address`, read with the next statement that needs an answer (PostgreSQL, in a
 * transaction): `yield* read(it)` answers a row or undefined.
 */
export const isSuppressedLater = (db: DB, teamId: string, address: string): Gen<Later<unknown>> =>
  getLater(sql(db, 'SELECT 1 AS x FROM suppressions WHERE team_id = ? AND address = ?'), teamId, address);
export const getSuppression = (db: DB, teamId: string, address: string) =>
  get(sql<SuppressionRow>(db, 'SELECT * FROM suppressions WHERE team_id = ? AND address = ?'), teamId, address);
/** Adds the address unless it is already there; returns whether a row was added. */
export function* addSuppression(db: DB, s: Omit<SuppressionRow, 'seq'>): Gen<boolean> {
  const text =
    'INSERT OR IGNORE INTO suppressions (team_id, address, reason, email_id, created_at) VALUES (@team_id, @address, @reason, @email_id, @created_at)';
  return (yield* run(sql(db, text), s)).changes > 0;
}
export function* removeSuppression(db: DB, teamId: string, address: string): Gen<boolean> {
  return (
    (yield* run(sql(db, 'DELETE FROM suppressions WHERE team_id = ? AND address = ?'), teamId, address)).changes > 0
  );
}
export const listSuppressions = (db: DB, teamId: string, beforeSeq: number | null, limit: number) =>
  all(
    sql<SuppressionRow>(db, 'SELECT * FROM suppressions WHERE team_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?'),
    teamId,
    beforeSeq ?? Number.MAX_SAFE_INTEGER,
    limit + 1,
  );
