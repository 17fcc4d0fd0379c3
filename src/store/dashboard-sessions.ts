// Dashboard sessions (migration table dashboard_sessions): one row per signed-in browser, keyed by the
// SHA-256 of its cookie value. Row access only; services/dashboard-sessions.ts holds the rules.
import { sql, type DB } from './db.js';
import { get, run, type Gen } from './op.js';

export interface SessionRow {
  id_hash: string;
  team_id: string;
  key_id: string | null;
  operator: number;
  csrf: string;
  created_at: number;
  expires_at: number;
}

export function* insertSession(db: DB, row: SessionRow): Gen<void> {
  yield* run(
    sql(
      db,
      `INSERT INTO dashboard_sessions (id_hash, team_id, key_id, operator, csrf, created_at, expires_at)
    VALUES (@id_hash, @team_id, @key_id, @operator, @csrf, @created_at, @expires_at)`,
    ),
    row,
  );
}
export const sessionByHash = (db: DB, idHash: string) =>
  get(sql<SessionRow>(db, 'SELECT * FROM dashboard_sessions WHERE id_hash = ?'), idHash);
export function* deleteExpiredSessions(db: DB, now: number): Gen<number> {
  return (yield* run(sql(db, 'DELETE FROM dashboard_sessions WHERE expires_at <= ?'), now)).changes;
}
export function* deleteSession(db: DB, idHash: string): Gen<number> {
  return (yield* run(sql(db, 'DELETE FROM dashboard_sessions WHERE id_hash = ?'), idHash)).changes;
}
export function* deleteKeySessions(db: DB, keyId: string): Gen<number> {
  return (yield* run(sql(db, 'DELETE FROM dashboard_sessions WHERE key_id = ?'), keyId)).changes;
}
