// Dashboard sessions (migration table dashboard_sessions): one row per signed-in browser, keyed by the
// SHA-256 of its cookie value. Row access only; services/dashboard-sessions.ts holds the rules.
import { sql, type DB } from './db.js';

export interface SessionRow {
  id_hash: string;
  team_id: string;
  key_id: string | null;
  operator: number;
  csrf: string;
  created_at: number;
  expires_at: number;
}

export function insertSession(db: DB, row: SessionRow): void {
  sql(
    db,
    `INSERT INTO dashboard_sessions (id_hash, team_id, key_id, operator, csrf, created_at, expires_at)
    VALUES (@id_hash, @team_id, @key_id, @operator, @csrf, @created_at, @expires_at)`,
  ).run(row);
}
export const sessionByHash = (db: DB, idHash: string) =>
  sql<SessionRow>(db, 'SELECT * FROM dashboard_sessions WHERE id_hash = ?').get(idHash);
export const deleteExpiredSessions = (db: DB, now: number): number =>
  sql(db, 'DELETE FROM dashboard_sessions WHERE expires_at <= ?').run(now).changes;
export const deleteSession = (db: DB, idHash: string): number =>
  sql(db, 'DELETE FROM dashboard_sessions WHERE id_hash = ?').run(idHash).changes;
export const deleteKeySessions = (db: DB, keyId: string): number =>
  sql(db, 'DELETE FROM dashboard_sessions WHERE key_id = ?').run(keyId).changes;
