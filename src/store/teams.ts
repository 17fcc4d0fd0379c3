// Teams and their API keys (only a SHA-256 hash of each key is stored).
import { sql, type DB } from './db.js';

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

export const insertTeam = (db: DB, t: TeamRow) =>
  sql(db, 'INSERT INTO teams (id, name, created_at) VALUES (@id, @name, @created_at)').run(t);
export const teamByName = (db: DB, name: string) => sql<TeamRow>(db, 'SELECT * FROM teams WHERE name = ?').get(name);
export const teamById = (db: DB, id: string) => sql<TeamRow>(db, 'SELECT * FROM teams WHERE id = ?').get(id);

export const insertKey = (db: DB, k: KeyRow) =>
  sql(
    db,
    `INSERT INTO api_keys (id, team_id, name, mode, scopes, hash, prefix, created_at, last_used_at, revoked_at)
  VALUES (@id, @team_id, @name, @mode, @scopes, @hash, @prefix, @created_at, @last_used_at, @revoked_at)`,
  ).run(k);
export const keyByHash = (db: DB, hash: string) => sql<KeyRow>(db, 'SELECT * FROM api_keys WHERE hash = ?').get(hash);
export const keyById = (db: DB, id: string) => sql<KeyRow>(db, 'SELECT * FROM api_keys WHERE id = ?').get(id);
export const keysOfTeam = (db: DB, teamId: string) =>
  sql<KeyRow>(db, 'SELECT * FROM api_keys WHERE team_id = ? ORDER BY created_at DESC, id DESC').all(teamId);
export const activeKeyCount = (db: DB, teamId: string) =>
  sql<{ n: number }>(db, 'SELECT count(*) AS n FROM api_keys WHERE team_id = ? AND revoked_at IS NULL').get(teamId)!.n;
export const revokeKey = (db: DB, id: string, at: number) =>
  sql(db, 'UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(at, id).changes;
export const touchKey = (db: DB, id: string, at: number) =>
  sql(db, 'UPDATE api_keys SET last_used_at = ? WHERE id = ?').run(at, id);
