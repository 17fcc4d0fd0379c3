// The per-team suppression list; addresses are stored lower-cased (core/address suppressionKey).
import { getLater, sql, type DB } from './db.js';

export interface SuppressionRow {
  seq: number;
  team_id: string;
  address: string;
  reason: 'hard_bounce' | 'complaint' | 'manual';
  email_id: string | null;
  created_at: number;
}

const suppressedStmt = (db: DB) => sql(db, 'SELECT 1 AS x FROM suppressions WHERE team_id = ? AND address = ?');
/**
 * Whether the team suppresses `address`, read with the next statement that needs an answer (PostgreSQL, in a
 * transaction): call the function for the answer.
 */
export function isSuppressedLater(db: DB, teamId: string, address: string): () => boolean {
  const row = getLater(suppressedStmt(db), teamId, address);
  return () => row() !== undefined;
}
export const getSuppression = (db: DB, teamId: string, address: string) =>
  sql<SuppressionRow>(db, 'SELECT * FROM suppressions WHERE team_id = ? AND address = ?').get(teamId, address);
/** Adds the address unless it is already there; returns whether a row was added. */
export const addSuppression = (db: DB, s: Omit<SuppressionRow, 'seq'>) =>
  sql(
    db,
    'INSERT OR IGNORE INTO suppressions (team_id, address, reason, email_id, created_at) VALUES (@team_id, @address, @reason, @email_id, @created_at)',
  ).run(s).changes > 0;
export const removeSuppression = (db: DB, teamId: string, address: string) =>
  sql(db, 'DELETE FROM suppressions WHERE team_id = ? AND address = ?').run(teamId, address).changes > 0;
export const listSuppressions = (db: DB, teamId: string, beforeSeq: number | null, limit: number) =>
  sql<SuppressionRow>(db, 'SELECT * FROM suppressions WHERE team_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?').all(
    teamId,
    beforeSeq ?? Number.MAX_SAFE_INTEGER,
    limit + 1,
  );
