// Idempotency records: (team, key) → request hash and the original response, kept 24 hours.
import { getLater, isPg, sql, type DB } from './db.js';

export interface IdemRow {
  team_id: string;
  key: string;
  request_hash: string;
  status: number;
  response_json: string;
  created_at: number;
}
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/**
 * The record of (team, key), if younger than 24 hours. PostgreSQL: first takes a lock on (team, key) until the
 * transaction ends (sent with the read, no round trip of its own), so a request with the same key in another
 * transaction (a group-commit turn whose COMMIT is still on its way on the store's other connection, or another
 * node) reads after that one committed: one email per key. SQLite serializes writers already.
 */
export const getIdem = (db: DB, teamId: string, key: string, nowMs: number) => {
  if (isPg(db)) getLater(sql(db, 'SELECT pg_advisory_xact_lock(2, hashtext(?))'), `${teamId}:${key}`);
  return sql<IdemRow>(db, 'SELECT * FROM idempotency WHERE team_id = ? AND key = ? AND created_at > ?').get(
    teamId,
    key,
    nowMs - IDEMPOTENCY_TTL_MS,
  );
};
export const putIdem = (db: DB, r: IdemRow) =>
  sql(
    db,
    'INSERT OR REPLACE INTO idempotency (team_id, key, request_hash, status, response_json, created_at) VALUES (@team_id, @key, @request_hash, @status, @response_json, @created_at)',
  ).run(r);
