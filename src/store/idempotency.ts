// Idempotency records: (team, mode, key) → request hash and the original response, kept 24 hours.
import { isPg, sql, type DB } from './db.js';
import { get, getLater, run, type Gen } from './op.js';
import { inLockstep, notInLockstep, turnState } from './lockstep.js';

export interface IdemRow {
  team_id: string;
  key: string;
  request_hash: string;
  status: number;
  response_json: string;
  created_at: number;
}
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/** Whose records: a team, through a key of a mode (the same key in two modes names two requests). */
export interface IdemOwner {
  teamId: string;
  mode: 'test' | 'live';
}

/**
 * The `team_id` column of an owner's records: the team id for live keys (the records written before modes were
 * told apart stay live keys' records) and `<team id>:test` for test keys. A team id holds no colon, so the two
 * never meet, and the lookup stays one primary-key read.
 */
const scopeOf = (o: IdemOwner) => (o.mode === 'live' ? o.teamId : `${o.teamId}:test`);

/**
 * The record of (team, mode, key), if younger than 24 hours. PostgreSQL: first takes a lock on (team, mode, key)
 * until the transaction ends (sent with the read, no round trip of its own), so a request with the same key in
 * another transaction (a group-commit turn whose COMMIT is still on its way on the store's other connection, or
 * another node) reads after that one committed: one email per key. SQLite serializes writers already.
 */
export function* getIdem(db: DB, owner: IdemOwner, key: string, nowMs: number): Gen<IdemRow | undefined> {
  const scope = scopeOf(owner);
  // Requests of one turn advanced together all read before any writes: a key twice in a turn runs it one by one.
  if (inLockstep(db)) {
    const taken = turnState(db, 'idempotency', () => new Set<string>())!;
    if (taken.has(`${scope} ${key}`)) throw notInLockstep('an Idempotency-Key twice in one turn');
    taken.add(`${scope} ${key}`);
  }
  // The scope holds no space: `<scope> <key>` names one (team, mode, key).
  if (isPg(db)) yield* getLater(sql(db, 'SELECT pg_advisory_xact_lock(2, hashtext(?))'), `${scope} ${key}`);
  const text = 'SELECT * FROM idempotency WHERE team_id = ? AND key = ? AND created_at > ?';
  return yield* get(sql<IdemRow>(db, text), scope, key, nowMs - IDEMPOTENCY_TTL_MS);
}
export const putIdem = (db: DB, owner: IdemOwner, r: Omit<IdemRow, 'team_id'>) =>
  run(
    sql(
      db,
      'INSERT OR REPLACE INTO idempotency (team_id, key, request_hash, status, response_json, created_at) VALUES (@team_id, @key, @request_hash, @status, @response_json, @created_at)',
    ),
    { ...r, team_id: scopeOf(owner) },
  );
