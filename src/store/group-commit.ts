// Group commit (groupTx): the requests of one event-loop turn share one transaction and one COMMIT, each answered
// once that COMMIT is durable. SQLite: the WAL flush after it runs off the event loop (db.ts flushWal).
// PostgreSQL: with `commitAhead` (on in `mta serve` unless MTA_PG_COMMIT_AHEAD=off) a turn that waited for no answer
// (writes only) sends its writes and COMMIT without waiting (PgDatabase.commitLater), behind up to two batches still
// in flight, and is answered when the server's answer is read, while this thread goes on with the next turn; a
// failure found then runs the turn's requests again, each in a savepoint.
import {
  atomically,
  flushWal,
  isPg,
  isRetryable,
  newTxEpoch,
  RETRIES,
  setSynchronous,
  tx,
  walSyncOf,
  type DB,
} from './db.js';
import { runSync, type Gen } from './op.js';
import { parkedAnswer, runAfter, stepPlan, type Parked, type TurnRequest } from './lockstep.js';
import { pooledTurnsOf } from './pg/pooled-turns.js';

interface Entry extends TurnRequest<Parked> {
  fn: () => unknown;
  /** times run again after its turn's COMMIT, sent without waiting, failed */
  replays?: number;
}
interface Batch {
  entries: Entry[];
  /** Run again after a failure: each request's scope is flushed at its end from now on (no lazy RELEASE). */
  strict?: boolean;
  /** the request whose scope runs now */
  running?: Entry;
  /** work waiting for this turn's COMMIT (whenCommitted) */
  waiters?: (() => void)[];
  /** PostgreSQL: the connection's round trips when the turn began (a turn that made none may commit ahead) */
  trips?: number;
  /**
   * PostgreSQL: held back behind batches in flight (flushWhenFree), to be looked at again when the oldest is
   * answered, or once it has AHEAD_MIN requests
   */
  waiting?: boolean;
}

/**
 * Inside a group-commit request: `fn(true)` once the turn's COMMIT is durable (before the request's promise
 * settles), `fn(false)` when this request's writes were rolled back, the commit failed, or (PostgreSQL) the turn is
 * run again (the request's new run registers again). Elsewhere (a plain transaction) false and fn is never called.
 * fn must not throw.
 */
export function afterCommit(db: DB, fn: (committed: boolean) => void): boolean {
  // A request of a turn on the pool (./pg/pooled-turns.ts) while its step runs, or of the synchronous turn.
  const e =
    (isPg(db) ? (db.scope?.current as Pick<Entry, 'after'> | undefined) : undefined) ?? batches.get(db)?.running;
  if (!e) return false;
  (e.after ??= []).push(fn);
  return true;
}

const batches = new WeakMap<DB, Batch>();

/**
 * fn once what this thread wrote so far is committed, or has failed: after the open turn's COMMIT or the one in
 * flight (PostgreSQL, commitAhead); otherwise on the next check phase (setImmediate), as before. For work that other
 * processes or connections must see the writes for (a sibling's nudge). fn must not throw.
 */
export function whenCommitted(db: DB, fn: () => void): void {
  // A plan on the pool outside a turn (runPlan, runLocking) inside its transaction: after that transaction's COMMIT
  // (dropped if it rolls back; a body run again registers again), then as below.
  if (isPg(db) && db.scope?.whenCommitted?.(() => whenCommitted(db, fn))) return;
  // Turns on the pool gathering or in flight first (their COMMITs), then the synchronous connection's.
  const pooled = isPg(db) ? pooledTurnsOf(db) : undefined;
  if (pooled?.whenSettled(() => committedSync(db, fn))) return;
  committedSync(db, fn);
}
function committedSync(db: DB, fn: () => void): void {
  const b = batches.get(db);
  if (b) (b.waiters ??= []).push(fn);
  else if (!isPg(db) || !db.client.whenSettled(fn)) setImmediate(fn);
}

/** The open group-commit turn (an identity for what is written in it), if any: a pooled turn's while its step runs. */
export const openTurn = (db: DB): object | undefined =>
  (isPg(db) ? (db.scope ?? undefined) : undefined) ?? batches.get(db);

/**
 * Group commit: runs fn at once inside a savepoint of a shared IMMEDIATE transaction that is
 * committed once per event-loop turn; the promise settles after that COMMIT, so a caller that
 * answers only then answers durably, while many requests share one WAL write.
 * Writes by plain `tx` made while a batch is open join it (they become savepoints too).
 * PostgreSQL, several nodes: when another node's transaction deadlocks with this one, the whole turn's
 * transaction is rolled back (releasing its locks) and every request of the turn runs again in a new one.
 */
export function groupTx<T>(db: DB, fn: () => T): Promise<T> {
  if (!batches.has(db) && db.inTransaction) return Promise.resolve().then(() => tx(db, fn));
  return new Promise<T>((resolve, reject) => runEntry(db, { fn, resolve: resolve as (v: unknown) => void, reject }));
}

/**
 * groupTx for a plan. PostgreSQL: the turn advances its requests' plans together (./lockstep.ts), each to its next
 * read that needs an answer, so one round trip answers the reads of every request of the turn, where one request
 * after another waited for its own. SQLite: groupTx(runSync(plan)).
 */
export function groupPlan<T>(db: DB, make: () => Gen<T>): Promise<T> {
  // PostgreSQL with turns on the pool (./pg/pooled-turns.ts): several turns in flight, the event loop free meanwhile.
  const pooled = isPg(db) ? pooledTurnsOf(db) : undefined;
  if (pooled) return pooled.submit(make);
  const fn = () => runSync(make());
  if (!isPg(db) || (!batches.has(db) && db.inTransaction)) return groupTx(db, fn);
  return new Promise<T>((resolve, reject) =>
    runEntry(db, { fn, make, resolve: resolve as (v: unknown) => void, reject }),
  );
}

/** The open turn, or a new one (its BEGIN, and its flush at the end of this event-loop turn). */
function openBatch(db: DB): Batch {
  const open = batches.get(db);
  if (open) return open;
  // Every write of the turn joins this transaction, so the flush after its COMMIT covers them all.
  if (walSyncOf(db)) setSynchronous(db, 'NORMAL');
  if (isPg(db)) db.leavingTurn ??= () => leaveTurn(db);
  db.exec('BEGIN IMMEDIATE');
  newTxEpoch(db);
  const b: Batch = { entries: [], trips: isPg(db) ? db.client.roundTrips : undefined };
  batches.set(db, b);
  setImmediate(() => flushWhenFree(db, b));
  return b;
}

/**
 * Commits the turn (at the end of its event-loop turn), unless it was committed early (leaveTurn). PostgreSQL with
 * batches in flight: the turn goes out behind them if it has AHEAD_MIN requests and fewer than AHEAD_DEPTH are on
 * their way, so the server has the next turn queued behind the one it runs; otherwise it stays open, gathering
 * requests, until the oldest answer is read (a small turn behind others would cost a transaction for little).
 */
function flushWhenFree(db: DB, b: Batch): void {
  if (batches.get(db) !== b) return;
  if (isPg(db) && db.commitAhead) {
    const n = db.client.inFlightCount;
    if (n > 0 && (n >= AHEAD_DEPTH || b.entries.length < AHEAD_MIN)) {
      if (!b.waiting) {
        b.waiting = true;
        db.client.whenOneSettled(() => {
          b.waiting = false;
          flushWhenFree(db, b);
        });
      }
      return;
    }
  }
  flush(db, b);
}

/**
 * PostgreSQL, commitAhead: batches sent without waiting (turns, result batches) that may be on their way at once
 * before a turn waits to be sent, and the fewest requests of a turn sent behind others. One at a time left the server
 * idle between a turn's answer and the next turn (the thread was busy when the answer came); 3 and 8 measured alike,
 * ~+10–20% accepts/s over 1. Without the minimum, two nodes sharing the 32 bench clients sent many small turns, each
 * a transaction with its COMMIT-time counter fold, and fell below one node (docs/postgres-notes.md "Session 14").
 */
const AHEAD_DEPTH = 3;
const AHEAD_MIN = 8;

/** Runs a request in the open turn (`strict`: it and the turn's later ones each in a savepoint). */
function runEntry(db: DB, e: Entry, strict = false): void {
  const b = openBatch(db);
  if (strict) b.strict = true;
  b.entries.push(e);
  if (b.waiting && b.entries.length === AHEAD_MIN) setImmediate(() => flushWhenFree(db, b));
  if (e.make && isPg(db) && !b.strict && !db.foreignJoined) {
    e.gen = e.make();
    return advance(db, b, e, { first: true });
  }
  try {
    // PostgreSQL: the request runs without a savepoint and its writes travel with the turn's next round trip (lazyNext).
    if (isPg(db) && !b.strict && !db.foreignJoined) db.lazyNext = true;
    b.running = e;
    try {
      e.result = atomically(db, e.fn);
    } finally {
      b.running = undefined;
    }
  } catch (err) {
    failed(db, b, e, err, isPg(db) && db.takeDirty());
  }
}

/** A request failed: PostgreSQL, after writing (no savepoint: its writes are in the turn), the others run again. */
function failed(db: DB, b: Batch, e: Entry, err: unknown, dirty: boolean): void {
  runAfter(e, false);
  if (isRetryable(err)) return restart(db, b, 1);
  e.failed = true;
  e.reject(err);
  if (dirty) restart(db, b, 1);
}

/**
 * PostgreSQL, lockstep: runs the request's plan on from where it parked (with the answer of its read, or the error)
 * to its next read that needs an answer, or its end, as a bare scope of the turn's transaction.
 */
function advance(db: DB, b: Batch, e: Entry, input: { first?: boolean; value?: unknown; error?: unknown }): void {
  if (!isPg(db) || !e.gen) return;
  b.running = e;
  const r = stepPlan(db, e.gen, input);
  b.running = undefined;
  if (r.wrote) e.wrote = true;
  if (r.parked) e.parked = r.parked;
  else {
    e.gen = undefined;
    if (r.failed) failed(db, b, e, r.error, e.wrote === true || r.pgError === true);
    else e.result = r.value;
  }
}

/**
 * PostgreSQL, before the turn commits: while requests wait for reads, one round trip answers all of them (the first
 * parked read sends everything queued) and each goes on to its next read or its end.
 */
function settleParked(db: DB, b: Batch): void {
  for (;;) {
    const parked = b.entries.filter((e) => e.parked && !e.failed);
    if (!parked.length || b.strict) return;
    for (const e of parked) {
      if (b.strict) break; // a restart ran every request again, one after another
      const p = e.parked!;
      e.parked = undefined;
      try {
        advance(db, b, e, parkedAnswer(p));
      } catch (err) {
        // Running the turn again failed too (the connection is lost): every request of the turn fails with it; the
        // turn's COMMIT then fails and rolls back (commit), and no error escapes this event-loop callback.
        for (const x of b.entries) {
          if (x.failed) continue;
          x.failed = true;
          x.parked = undefined;
          runAfter(x, false);
          x.reject(err);
        }
        return;
      }
    }
  }
}

/**
 * PostgreSQL: work other than a group-commit request about to join an open turn (the delivery loop's claims and
 * results, any plain `tx`) commits the turn first and runs in a transaction of its own. A turn replayed after a
 * deadlock (restart) runs its requests again, but work that merely joined it would be rolled back unseen: a claim
 * the loop holds in memory, a delivered recipient's result (sent again once its lease ends). SQLite never replays.
 */
export function leaveTurn(db: DB): void {
  if (!isPg(db)) return;
  const b = batches.get(db);
  if (b && !b.running) flush(db, b);
}

/** Rolls the turn's transaction back and runs its requests again in a new one (PostgreSQL deadlock). */
function restart(db: DB, b: Batch, attempt: number): void {
  b.strict = true;
  for (const e of b.entries) {
    e.gen = undefined;
    e.parked = undefined;
  }
  db.exec('ROLLBACK');
  db.exec('BEGIN');
  newTxEpoch(db);
  for (const e of b.entries) {
    runAfter(e, false);
    if (e.failed) continue;
    b.running = e;
    try {
      e.result = atomically(db, e.fn);
    } catch (err) {
      b.running = undefined;
      if (isRetryable(err) && attempt < RETRIES) return restart(db, b, attempt + 1);
      e.failed = true;
      e.reject(err);
    }
    b.running = undefined;
  }
}

function flush(db: DB, b: Batch): void {
  if (isPg(db)) settleParked(db, b);
  batches.delete(db);
  const live = b.entries.some((e) => !e.failed);
  // PostgreSQL: the COMMIT sent without waiting; the turn settles when its answer is read (committedLater). Only
  // for a turn that waited for no answer: one that did (a live request's credit charge, which holds the team's
  // credit row until COMMIT) gains nothing, since the next turn's charge waits for this COMMIT anyway, and measured
  // 5-6% slower in the live delivery bench.
  const ahead = live && isPg(db) && db.commitAhead && db.client.roundTrips === b.trips;
  if (ahead && db.commitLater((err) => committedLater(db, b, err))) {
    for (const fn of b.waiters ?? []) db.client.whenSettled(fn);
    return;
  }
  const wal = walSyncOf(db);
  try {
    commit(db, b);
  } finally {
    if (wal) setSynchronous(db, 'FULL');
  }
  const waiters = b.waiters;
  if (waiters) setImmediate(() => waiters.forEach((fn) => fn()));
  const settle = (err: Error | null) => settleBatch(b, err);
  if (!live) return settle(null);
  if (wal) flushWal(wal, settle);
  else settle(null);
}

function settleBatch(b: Batch, err: Error | null): void {
  for (const e of b.entries) runAfter(e, !err && !e.failed);
  for (const e of b.entries) {
    if (e.failed) continue;
    if (err) e.reject(err);
    else e.resolve(e.result);
  }
}

/**
 * PostgreSQL: the answer to a turn's COMMIT sent without waiting (commitLater) has been read. On a retryable error
 * (a deadlock with another node, or a write of one of its requests refused: REPLAY) nothing of the turn was kept,
 * and its requests run again in the open turn, each in a savepoint.
 */
function committedLater(db: DB, b: Batch, err: Error | null): void {
  if (!err) return settleBatch(b, null);
  for (const e of b.entries) {
    runAfter(e, false);
    if (e.failed) continue;
    e.replays = (e.replays ?? 0) + 1;
    if (isRetryable(err) && e.replays < RETRIES) runEntry(db, e, true);
    else {
      e.failed = true;
      e.reject(err);
    }
  }
}

function commit(db: DB, b: Batch): void {
  for (let attempt = 1; ; attempt++) {
    try {
      db.exec('COMMIT');
      break;
    } catch (err) {
      if (isRetryable(err) && attempt < RETRIES) {
        restart(db, b, attempt);
        continue;
      }
      try {
        if (db.inTransaction) db.exec('ROLLBACK');
      } catch {
        /* already rolled back */
      }
      for (const e of b.entries) if (!e.failed) e.reject(err);
      for (const e of b.entries) e.failed = true;
      return;
    }
  }
}
