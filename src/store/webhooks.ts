// Webhook endpoints, the outbox (one row per event and endpoint, table webhook_deliveries; the API calls
// a row a "webhook delivery"; claimed with a lease on next_attempt_at) and the attempt log. Row access only.
import { forgetMemo, nowAndAfterCommit, sql, txMemoed, txRemember, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';

export type Mode = 'test' | 'live';
export interface EndpointRow {
  seq: number;
  id: string;
  team_id: string;
  mode: Mode;
  url: string;
  events: string;
  secret: string;
  old_secret: string | null;
  old_secret_expires_at: number | null;
  enabled: number;
  disabled_reason: string | null;
  disabled_at: number | null;
  failing_since: number | null;
  consecutive_failed: number;
  created_at: number;
  updated_at: number;
}
export type OutboxStatus = 'pending' | 'succeeded' | 'failed';
export interface OutboxRow {
  seq: number;
  id: string;
  endpoint_seq: number;
  event_id: string;
  event_type: string;
  payload: string;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}
/** `delivery_seq`: the outbox row (column name kept from the schema). */
export interface AttemptRow {
  seq: number;
  delivery_seq: number;
  attempt: number;
  status_code: number | null;
  response_snippet: string | null;
  error: string | null;
  duration_ms: number;
  next_retry_at: number | null;
  created_at: number;
}

const EP_COLS = 'id, team_id, mode, url, events, secret, enabled, created_at, updated_at';
const MEMO = 'webhook_endpoints:';
const generations = new WeakMap<DB, number>();
/** Changes with every write of webhook endpoints made through this module (endpoint caches compare it). */
export const endpointsGeneration = (db: DB): number => generations.get(db) ?? 0;
/** Every write to webhook_endpoints goes through this: what enabledEndpointsOfTeam remembered is dropped. */
const written = <T>(db: DB, result: T): T => {
  forgetMemo(db, MEMO);
  nowAndAfterCommit(db, () => generations.set(db, endpointsGeneration(db) + 1));
  return result;
};
export function* insertEndpoint(
  db: DB,
  e: Pick<
    EndpointRow,
    'id' | 'team_id' | 'mode' | 'url' | 'events' | 'secret' | 'enabled' | 'created_at' | 'updated_at'
  >,
): Gen<number> {
  const text = `INSERT INTO webhook_endpoints (${EP_COLS}) VALUES (@id, @team_id, @mode, @url, @events, @secret, @enabled, @created_at, @updated_at)`;
  return written(db, Number((yield* run(sql(db, text), e)).lastInsertRowid));
}
/** `onlyTest`: a test key's view, where live endpoints do not exist. */
export const endpointById = (db: DB, teamId: string, id: string, onlyTest: boolean) =>
  get(
    sql<EndpointRow>(db, "SELECT * FROM webhook_endpoints WHERE id = ? AND team_id = ? AND (? = 0 OR mode = 'test')"),
    id,
    teamId,
    onlyTest ? 1 : 0,
  );
export const endpointBySeq = (db: DB, seq: number) =>
  get(sql<EndpointRow>(db, 'SELECT * FROM webhook_endpoints WHERE seq = ?'), seq);
export const endpointsOfTeam = (db: DB, teamId: string, onlyTest: boolean, afterSeq: number | null, limit: number) =>
  all(
    sql<EndpointRow>(
      db,
      "SELECT * FROM webhook_endpoints WHERE team_id = ? AND (? = 0 OR mode = 'test') AND seq > ? ORDER BY seq LIMIT ?",
    ),
    teamId,
    onlyTest ? 1 : 0,
    afterSeq ?? 0,
    limit + 1,
  );
/** Read once per transaction and team on PostgreSQL (txMemo); services/webhooks.ts remembers it across turns too. */
export function* enabledEndpointsOfTeam(
  db: DB,
  teamId: string,
): Gen<readonly Pick<EndpointRow, 'seq' | 'events' | 'mode'>[]> {
  const kept = txMemoed<readonly Pick<EndpointRow, 'seq' | 'events' | 'mode'>[]>(db, MEMO + teamId);
  if (kept) return kept.value;
  const rows = yield* all(
    sql<Pick<EndpointRow, 'seq' | 'events' | 'mode'>>(
      db,
      'SELECT seq, events, mode FROM webhook_endpoints WHERE team_id = ? AND enabled = 1',
    ),
    teamId,
  );
  return txRemember(db, MEMO + teamId, rows);
}
export function* deleteEndpoint(db: DB, seq: number): Gen<void> {
  written(db, yield* run(sql(db, 'DELETE FROM webhook_endpoints WHERE seq = ?'), seq));
}

const UPDATE_ENDPOINT = `UPDATE webhook_endpoints SET url = @url, events = @events, enabled = @enabled, updated_at = @at,
    disabled_reason = CASE WHEN @enabled = 1 THEN NULL ELSE disabled_reason END,
    disabled_at = CASE WHEN @enabled = 1 THEN NULL WHEN enabled = 1 THEN @at ELSE disabled_at END,
    failing_since = CASE WHEN @enabled = 1 AND enabled = 0 THEN NULL ELSE failing_since END,
    consecutive_failed = CASE WHEN @enabled = 1 AND enabled = 0 THEN 0 ELSE consecutive_failed END
    WHERE seq = @seq`;
export function* updateEndpoint(
  db: DB,
  seq: number,
  f: { url: string; events: string; enabled: number; at: number },
): Gen<void> {
  // PostgreSQL infers one type per parameter: the same number used as a column value and in a comparison.
  const pg = UPDATE_ENDPOINT.replace(/@(enabled|at)\b/g, '@$1::bigint');
  written(db, yield* run(sql(db, UPDATE_ENDPOINT, pg), { seq, ...f }));
}
export const rotateSecret = (db: DB, seq: number, secret: string, oldUntil: number, at: number) =>
  run(
    sql(
      db,
      'UPDATE webhook_endpoints SET old_secret = secret, old_secret_expires_at = ?, secret = ?, updated_at = ? WHERE seq = ?',
    ),
    oldUntil,
    secret,
    at,
    seq,
  );
export function* disableEndpoint(db: DB, seq: number, reason: string, at: number): Gen<void> {
  const text =
    'UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, disabled_at = ?, updated_at = ? WHERE seq = ? AND enabled = 1';
  written(db, yield* run(sql(db, text), reason, at, at, seq));
}
export const endpointSucceeded = (db: DB, seq: number) =>
  run(sql(db, 'UPDATE webhook_endpoints SET failing_since = NULL, consecutive_failed = 0 WHERE seq = ?'), seq);
export const endpointFailed = (db: DB, seq: number, at: number, ended: boolean) =>
  run(
    sql(
      db,
      'UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, ?), consecutive_failed = consecutive_failed + ? WHERE seq = ?',
    ),
    at,
    ended ? 1 : 0,
    seq,
  );

/** A new outbox row, its columns and values (insertOutboxRow, queueOutboxRow). */
type NewOutboxRow = Pick<
  OutboxRow,
  'id' | 'endpoint_seq' | 'event_id' | 'event_type' | 'payload' | 'next_attempt_at' | 'created_at'
>;
const OUTBOX_COLS = 'id, endpoint_seq, event_id, event_type, payload, status, next_attempt_at, created_at, updated_at';
const OUTBOX_VALUES =
  "@id, @endpoint_seq, @event_id, @event_type, @payload, 'pending', @next_attempt_at, @created_at, @created_at";
export function* insertOutboxRow(db: DB, d: NewOutboxRow): Gen<number> {
  return Number(
    (yield* run(sql(db, `INSERT INTO webhook_deliveries (${OUTBOX_COLS}) VALUES (${OUTBOX_VALUES})`), d))
      .lastInsertRowid,
  );
}
/**
 * An event's outbox row, written only if its endpoint is still there and enabled: the endpoints it is written for
 * may have been read a moment ago (services/webhooks.ts remembers them on PostgreSQL), and another node may have
 * deleted or disabled one since.
 */
export function* queueOutboxRow(db: DB, d: NewOutboxRow): Gen<void> {
  yield* run(
    sql(
      db,
      `INSERT INTO webhook_deliveries (${OUTBOX_COLS}) SELECT ${OUTBOX_VALUES}
    WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE seq = @endpoint_seq AND enabled = 1)`,
    ),
    d,
  );
}
export const outboxRowBySeq = (db: DB, seq: number) =>
  get(sql<OutboxRow>(db, 'SELECT * FROM webhook_deliveries WHERE seq = ?'), seq);
export const outboxRowById = (db: DB, endpointSeq: number, id: string) =>
  get(sql<OutboxRow>(db, 'SELECT * FROM webhook_deliveries WHERE id = ? AND endpoint_seq = ?'), id, endpointSeq);
/** Newest first, `limit + 1` rows. */
export const outboxOfEndpoint = (db: DB, endpointSeq: number, beforeSeq: number | null, limit: number) =>
  all(
    sql<OutboxRow>(db, 'SELECT * FROM webhook_deliveries WHERE endpoint_seq = ? AND seq < ? ORDER BY seq DESC LIMIT ?'),
    endpointSeq,
    beforeSeq ?? Number.MAX_SAFE_INTEGER,
    limit + 1,
  );
export const attemptsOf = (db: DB, outboxSeq: number) =>
  all(sql<AttemptRow>(db, 'SELECT * FROM webhook_attempts WHERE delivery_seq = ? ORDER BY seq'), outboxSeq);

/** Claims up to `limit` due outbox rows of enabled endpoints: moves next_attempt_at to the lease's end. */
export function* claimDue(db: DB, now: number, leaseUntil: number, limit: number): Gen<number[]> {
  // PostgreSQL (several nodes): rows another node is leasing right now are skipped (locked until its commit).
  const pick = `SELECT d.seq FROM webhook_deliveries d JOIN webhook_endpoints e ON e.seq = d.endpoint_seq
    WHERE d.next_attempt_at IS NOT NULL AND d.next_attempt_at <= ? AND e.enabled = 1 ORDER BY d.next_attempt_at LIMIT ?`;
  const seqs = (yield* all(sql<{ seq: number }>(db, pick, `${pick} FOR UPDATE OF d SKIP LOCKED`), now, limit)).map(
    (r) => r.seq,
  );
  const lease = sql(db, 'UPDATE webhook_deliveries SET next_attempt_at = ? WHERE seq = ?');
  for (const s of seqs) yield* run(lease, leaseUntil, s);
  return seqs;
}
export function* nextDueAt(db: DB): Gen<number | null> {
  const text = `SELECT min(d.next_attempt_at) AS t FROM webhook_deliveries d JOIN webhook_endpoints e ON e.seq = d.endpoint_seq
    WHERE d.next_attempt_at IS NOT NULL AND e.enabled = 1`;
  return (yield* get(sql<{ t: number | null }>(db, text)))!.t;
}
/** Outbox rows not yet ended. */
export function* countPendingOutbox(db: DB): Gen<number> {
  return (yield* get(sql<number>(db, "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").pluck())) ?? 0;
}
export const releaseLease = (db: DB, seq: number, at: number) =>
  run(sql(db, "UPDATE webhook_deliveries SET next_attempt_at = ? WHERE seq = ? AND status = 'pending'"), at, seq);

/** Records one attempt's result on a still-pending outbox row; false if it is gone or already ended. */
export function* recordAttempt(db: DB, a: Omit<AttemptRow, 'seq'>, status: OutboxStatus): Gen<boolean> {
  const done = status === 'pending' ? null : a.created_at;
  const update = sql(
    db,
    `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, last_error = ?,
    updated_at = ?, completed_at = ? WHERE seq = ? AND status = 'pending'`,
  );
  const changed = (yield* run(
    update,
    status,
    a.attempt,
    a.next_retry_at,
    a.status_code,
    a.error,
    a.created_at,
    done,
    a.delivery_seq,
  )).changes;
  if (!changed) return false;
  yield* run(
    sql(
      db,
      `INSERT INTO webhook_attempts (delivery_seq, attempt, status_code, response_snippet, error, duration_ms, next_retry_at, created_at)
    VALUES (@delivery_seq, @attempt, @status_code, @response_snippet, @error, @duration_ms, @next_retry_at, @created_at)`,
    ),
    a,
  );
  return true;
}
/** Ends every pending outbox row of an endpoint as failed (it was disabled). */
export const failPending = (db: DB, endpointSeq: number, reason: string, at: number) =>
  run(
    sql(
      db,
      `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = ?, updated_at = ?, completed_at = ?
    WHERE endpoint_seq = ? AND status = 'pending'`,
    ),
    reason,
    at,
    at,
    endpointSeq,
  );
/** Drops ended outbox rows (and their attempts) completed before `before`. */
export function* pruneOutbox(db: DB, before: number, limit: number): Gen<number> {
  const text =
    'DELETE FROM webhook_deliveries WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE completed_at IS NOT NULL AND completed_at < ? LIMIT ?)';
  return (yield* run(sql(db, text), before, limit)).changes;
}
