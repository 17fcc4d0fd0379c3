// Teams and their API keys (only a SHA-256 hash of each key is stored).
import { sql, type DB } from './db.js';
import { all, get, run, type Gen, type RunResult } from './op.js';

export interface TeamRow {
  id: string;
  name: string;
  created_at: number;
}
export interface KeyRow {
  id: string;
  team_id: string;
  name: string | null;
  mode: 'test' | 'live';
  scopes: string;
  hash: string;
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export const insertTeam = (db: DB, t: TeamRow): Gen<RunResult> =>
  run(sql(db, 'INSERT INTO teams (id, name, created_at) VALUES (@id, @name, @created_at)'), t);
export const teamByName = (db: DB, name: string) => get(sql<TeamRow>(db, 'SELECT * FROM teams WHERE name = ?'), name);
/** Every team's id (retention passes go team by team). */
export const allTeamIds = (db: DB) => all(sql<string>(db, 'SELECT id FROM teams ORDER BY id').pluck());
export const teamById = (db: DB, id: string) => get(sql<TeamRow>(db, 'SELECT * FROM teams WHERE id = ?'), id);

export const insertKey = (db: DB, k: KeyRow): Gen<RunResult> =>
  run(
    sql(
      db,
      `INSERT INTO api_keys (id, team_id, name, mode, scopes, hash, prefix, created_at, last_used_at, revoked_at)
  VALUES (@id, @team_id, @name, @mode, @scopes, @hash, @prefix, @created_at, @last_used_at, @revoked_at)`,
    ),
    k,
  );
export const keyByHash = (db: DB, hash: string) => get(sql<KeyRow>(db, 'SELECT * FROM api_keys WHERE hash = ?'), hash);
export const keyById = (db: DB, id: string) => get(sql<KeyRow>(db, 'SELECT * FROM api_keys WHERE id = ?'), id);
export const keysOfTeam = (db: DB, teamId: string) =>
  all(sql<KeyRow>(db, 'SELECT * FROM api_keys WHERE team_id = ? ORDER BY created_at DESC, id DESC'), teamId);
export function* activeKeyCount(db: DB, teamId: string): Gen<number> {
  const text = 'SELECT count(*) AS n FROM api_keys WHERE team_id = ? AND revoked_at IS NULL';
  return (yield* get(sql<{ n: number }>(db, text), teamId))!.n;
}
export function* revokeKey(db: DB, id: string, at: number): Gen<number> {
  return (yield* run(sql(db, 'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'), at, id))
    .changes;
}
export const touchKey = (db: DB, id: string, at: number): Gen<RunResult> =>
  run(sql(db, 'UPDATE api_keys SET last_used_at = ? WHERE id = ?'), at, id);
