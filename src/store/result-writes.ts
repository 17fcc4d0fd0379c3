// A batch of delivery results written set-wise (services/transition.ts OutcomeBatch, outbound/results.ts): on
// PostgreSQL every recipient's compare-and-set write of the batch is one UPDATE instead of one per recipient (each a
// call on the node and an executor start on the server; docs/postgres-notes.md "Session 12"), and every email's new
// status one more. SQLite runs the same writes one row at a time, as before.
import { isPg, PLAN_EACH_TIME, sql, type DB } from './db.js';
import { allLater, fire, read, type Gen, type Later } from './op.js';
import { setEmailStatusFrom, writeDeliveryFromLater, type DeliveryWrite } from './emails.js';
import type { Status } from '../core/status.js';

/** One recipient's new state, written only if its status is still `from` (writeDeliveryFrom). */
export interface DeliveryResult {
  id: number;
  from: Status;
  w: DeliveryWrite;
  /** Also drops the claim's lease (the delivery loop's results). */
  settle: boolean;
  /**
   * The delivery loop's claim (its lease token, store/queue.ts owned()): written only while the row still carries it;
   * a row another node claimed since (or released, settled) is not written. Null: a token unknown, matching no row.
   */
  lease?: number | null;
}

// The planner is told the batch's size each time (a plan made for this statement's values, and `LIMIT ?`: the batch's
// length, since jsonb_to_recordset alone is estimated at 100 rows whatever it holds). With 100 rows expected, a table
// of fewer than ~25,000 rows looks cheaper to scan whole and hash than to probe by key: every batch read all of
// deliveries (or emails) on the server (test/integration/pg-result-plans.test.ts).
// What the row holds where the write brings nothing (attempts, reply, reason) and its hold are taken from the row
// itself, so a write made from what the delivery loop knows, without reading the row (a recipient inserted moments
// ago, services/transition.ts knownReads), lands as one made from a fresh read: a recipient held meanwhile keeps
// no retry time (as updateDelivery does for a held row it read).
export const DELIVERIES = `${PLAN_EACH_TIME} UPDATE deliveries d SET status = u.status,
  attempts = coalesce(u.attempts, d.attempts), next_attempt_at = CASE WHEN d.held_at IS NULL THEN u.next END,
  last_reply = coalesce(u.last_reply, d.last_reply), reason = coalesce(u.reason, d.reason),
  first_attempt_at = coalesce(d.first_attempt_at, ?), updated_at = ?,
  leased_until = CASE WHEN u.settle THEN NULL ELSE d.leased_until END
  FROM (SELECT * FROM jsonb_to_recordset(?::jsonb) AS u(id bigint, from_status text, status text, attempts bigint,
    next bigint, last_reply text, reason text, settle boolean, lease bigint) LIMIT ?) u
  WHERE d.id = u.id AND d.status = u.from_status AND (u.lease IS NULL OR d.leased_until = u.lease) RETURNING d.id`;
/**
 * A compare-and-set UPDATE … RETURNING checked by the server: unless every row was still in its from_status (the two
 * last parameters: how many rows), the statement fails, and the transaction with it, so no answer needs to be
 * waited for (a COMMIT sent without waiting, lightTxLater; isOutcomeRaceError).
 */
const everyRow = (update: string, what: string) => `${PLAN_EACH_TIME} WITH w AS (${update.slice(PLAN_EACH_TIME.length)})
  SELECT CASE WHEN count(*) = ? THEN 0 ELSE ('outcome race: ' || (? - count(*)) || ' ${what} no longer in the status read')::int END FROM w`;
export const CHECKED = everyRow(DELIVERIES, 'recipient(s)');
export const EMAILS = `${PLAN_EACH_TIME} UPDATE emails e SET status = u.status, updated_at = ?
  FROM (SELECT * FROM jsonb_to_recordset(?::jsonb) AS u(seq bigint, status text) LIMIT ?) u WHERE e.seq = u.seq`;
// Each email written only if its status is still the one its new status was derived from.
export const EMAILS_CHECKED = everyRow(
  `${PLAN_EACH_TIME} UPDATE emails e SET status = u.status, updated_at = ?
  FROM (SELECT * FROM jsonb_to_recordset(?::jsonb) AS u(seq bigint, from_status text, status text) LIMIT ?) u
  WHERE e.seq = u.seq AND e.status = u.from_status RETURNING e.seq`,
  'email(s)',
);

/** Whether every row was written: the set-wise write's answer (`n` rows back), or else `ok` (nothing to read). */
function* everyWritten(answer: Later<{ id: number }[]> | null, n: number, ok = () => true): Gen<boolean> {
  return answer ? (yield* read(answer)).length === n : ok();
}

/**
 * Writes the results (each id at most once); the plan it answers tells whether every row was still in its `from`
 * status and was written. PostgreSQL, inside a transaction: one statement, its answer read with the next one that
 * needs an answer (running that plan sends it if nothing did). `checked` (PostgreSQL): the server checks instead,
 * and the statement fails unless every row was written (isOutcomeRaceError); nobody waits for its answer.
 */
export function* writeDeliveriesFromLater(
  db: DB,
  rows: readonly DeliveryResult[],
  now: number,
  opts: { checked?: boolean } = {},
): Gen<() => Gen<boolean>> {
  if (rows.length === 0) return () => everyWritten(null, 0);
  if (!isPg(db)) {
    const done: (() => boolean)[] = [];
    for (const r of rows) done.push(yield* writeDeliveryFromLater(db, r.id, r.from, r.w, now, r.settle, r.lease));
    return () => everyWritten(null, 0, () => done.every((ok) => ok()));
  }
  const json = JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      from_status: r.from,
      status: r.w.status,
      attempts: r.w.attempts,
      next: r.w.next_attempt_at,
      last_reply: r.w.last_reply,
      reason: r.w.reason,
      settle: r.settle,
      lease: r.lease === undefined ? null : (r.lease ?? -1), // null: no claim to check; -1 matches no row
    })),
  );
  if (opts.checked) {
    // Taken as written: if a row was not, the transaction fails (isOutcomeRaceError).
    yield* fire(sql(db, CHECKED), now, now, json, rows.length, rows.length, rows.length);
    return () => everyWritten(null, 0);
  }
  const answer = yield* allLater(sql<{ id: number }>(db, DELIVERIES), now, now, json, rows.length);
  // Answered when the caller runs the plan (the synchronous engine reads it then): each id once, so every row came back.
  return () => everyWritten(answer, rows.length);
}

/**
 * Sets each email's status (each seq at most once); PostgreSQL: one statement, nobody waits for its answer.
 * `checked` (PostgreSQL): only where the status is still `from`, else the statement fails (isOutcomeRaceError).
 * SQLite: each only where its status is still `from` (a batch written from what the delivery loop knew, unread);
 * false unless every one was.
 */
export function* setEmailStatuses(
  db: DB,
  rows: readonly { seq: number; status: Status; from: Status }[],
  now: number,
  opts: { checked?: boolean } = {},
): Gen<boolean> {
  if (rows.length === 0) return true;
  if (!isPg(db)) {
    let all = true;
    for (const r of rows) if (!(yield* setEmailStatusFrom(db, r.seq, r.status, r.from, now))) all = false;
    return all;
  }
  if (!opts.checked) {
    yield* fire(sql(db, EMAILS), now, JSON.stringify(rows.map(({ seq, status }) => ({ seq, status }))), rows.length);
    return true;
  }
  const json = JSON.stringify(rows.map((r) => ({ seq: r.seq, from_status: r.from, status: r.status })));
  yield* fire(sql(db, EMAILS_CHECKED), now, json, rows.length, rows.length, rows.length);
  return true;
}

/** The error of a `checked` write that found a recipient no longer in the status it was read in. */
export const isOutcomeRaceError = (err: unknown): boolean => /outcome race: /.test(String((err as Error)?.message));
