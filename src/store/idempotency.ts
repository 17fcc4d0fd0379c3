// Idempotency records: (team, key) → request hash and the original response, kept 24 hours.
import { sql, type DB } from './db.js';

export interface IdemRow {
  team_id: string;
  key: string;
  request_hash: string;
  status: number;
  response_json: string;
  created_at: number;
}
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export const getIdem = (db: DB, teamId: string, key: string, nowMs: number) =>
  sql<IdemRow>(db, 'SELECT * FROM idempotency WHERE team_id = ? AND key = ? AND created_at > ?').get(
    teamId,
    key,
    nowMs - IDEMPOTENCY_TTL_MS,
  );
export const putIdem = (db: DB, r: IdemRow) =>
  sql(
    db,
    'INSERT OR REPLACE INTO idempotency (team_id, key, request_hash, status, response_json, created_at) VALUES (@team_id, @key, @request_hash, @status, @response_json, @created_at)',
  ).run(r);
