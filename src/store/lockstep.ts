// PostgreSQL: the requests of a group-commit turn advanced together (./group-commit.ts groupPlan,
// docs/async-store.md). Each request's plan runs until it yields a read that needs the server's answer; that read
// is queued instead (getLater) and the request parks. When the turn is about to commit, one round trip sends every
// parked read (with the writes queued so far) and each request goes on. A request runs as a bare scope of the turn's
// transaction (PgDatabase.transaction with lazyNext): no savepoint; a failure after writing makes the turn run its
// requests again one after another (`strict`), which is also what a turn falls back to whenever in doubt.
// What one request after another gave for free is kept by `turnState`: credits and idempotency keys (their stores).
import { allLater as allLaterSync, getLater as getLaterSync, isPg, txMemo, type DB } from './db.js';
import { answer, type Gen, type Op } from './op.js';
import type { PgDatabase } from './pg/database.js';
import { PgError } from './pg/errors.js';
import { REPLAY } from './pg/sync-client.js';

/** The read a parked request waits for: called after the turn's next round trip, it answers (or throws). */
export type Parked = () => unknown;

export interface Step {
  parked?: Parked;
  value?: unknown;
  failed?: boolean;
  error?: unknown;
  pgError?: boolean;
  wrote: boolean;
}

/**
 * A request of a group-commit turn (./group-commit.ts on the synchronous connection, ./pg/pooled-turns.ts on the
 * pool): its plan, its run in lockstep and the read it is parked on (`P`: how that engine answers it later), its
 * answer, and what waits for the turn's COMMIT (afterCommit).
 */
export interface TurnRequest<P> {
  /** groupPlan: the request's plan, which the turn advances in lockstep with the others */
  make?: () => Gen<unknown>;
  /** its run in lockstep, and the read it waits for (answered by the turn's next round trip) */
  gen?: Gen<unknown>;
  parked?: P;
  /** it wrote while in lockstep (a failure after writing leaves the turn dirty) */
  wrote?: boolean;
  result?: unknown;
  failed?: boolean;
  /** afterCommit callbacks of this request */
  after?: ((committed: boolean) => void)[];
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** Calls (once) the request's afterCommit callbacks: `committed` says whether its writes are durable. */
export function runAfter(r: { after?: ((committed: boolean) => void)[] }, committed: boolean): void {
  const list = r.after;
  r.after = undefined;
  for (const fn of list ?? []) fn(committed);
}

/** The answer a parked read got, or its error. */
export function parkedAnswer(p: Parked): { value?: unknown; error?: unknown } {
  try {
    return { value: p() };
  } catch (error) {
    return { error };
  }
}

/** A statement that needs the server's answer: queued with the other requests' (its answer later), or null. */
function parkOf(op: Op): Parked | null {
  if (op.k === 'get') return getLaterSync(op.s, ...op.args);
  if (op.k === 'all') return allLaterSync(op.s, ...op.args);
  if (op.k === 'read') return op.later as unknown as Parked;
  return null;
}

let stepping: DB | null = null;
/**
 * Whether the running plan is one of a turn's requests advanced together (lockstep), on `db`: a turn on the
 * synchronous connection (stepPlan) or on a connection of the pool (./pg/pooled-turns.ts).
 */
export const inLockstep = (db: DB): boolean => stepping === db || (isPg(db) && db.scope?.lockstep === true);
/** Whether the running plan is a request of a pooled turn advanced in lockstep (./pg/pooled-turns.ts). */
export const inPooledLockstep = (db: DB): boolean => isPg(db) && db.scope?.lockstep === true;

/** Runs a request's plan on (from its start, with its read's answer, or with its error) to its next read or its end. */
export function stepPlan(
  db: PgDatabase,
  gen: Gen<unknown>,
  input: { first?: boolean; value?: unknown; error?: unknown },
): Step {
  const before = db.writes;
  const wrote = () => db.writes !== before;
  db.depth++;
  stepping = db;
  try {
    let r = input.error !== undefined ? gen.throw(input.error) : input.first ? gen.next() : gen.next(input.value);
    for (;;) {
      if (r.done) return { value: r.value, wrote: wrote() };
      const parked = parkOf(r.value);
      if (parked) return { parked, wrote: wrote() };
      let v: unknown;
      try {
        v = answer(r.value);
      } catch (err) {
        r = gen.throw(err);
        continue;
      }
      r = gen.next(v);
    }
  } catch (error) {
    return { failed: true, error, pgError: error instanceof PgError, wrote: wrote() };
  } finally {
    stepping = null;
    db.depth--;
    // The queued statements include this scope's writes: an error of their round trip poisons the turn (REPLAY).
    db.client.unconfirmed = true;
  }
}

/**
 * Thrown by a request that cannot go on in lockstep (it needs what an earlier request of the turn is writing): the
 * turn runs its requests again, one after another (retryable, like a deadlock).
 */
export function notInLockstep(why: string): PgError {
  const e = new PgError(`${why}: the turn runs its requests one after another`);
  e.code = REPLAY;
  return e;
}

/**
 * PostgreSQL, inside a transaction: an object kept for this transaction under `key` (made by `init` the first time:
 * db.ts txMemo), for what the requests of one turn must see of each other's writes before the server does (a team's
 * credit balance, the idempotency keys taken). Undefined elsewhere (SQLite, or outside a transaction).
 */
export const turnState = <T>(db: DB, key: string, init: () => T): T | undefined =>
  isPg(db) && db.inTransaction ? txMemo(db, `turn ${key}`, init) : undefined;
