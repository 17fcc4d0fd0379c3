// The asynchronous driver of store plans on PostgreSQL (docs/async-store.md, step 2): a plan (../op.ts) runs on one
// connection of a pool and the event loop goes on while the server answers. Writes whose answer the plan does not
// read (`fire`) and reads it will look at later (`getLater`) wait in a queue and go out just before the next
// statement that needs an answer; a transaction is BEGIN … COMMIT on the plan's connection (SAVEPOINTs when nested)
// and is run again after a deadlock with another transaction, as the synchronous engine does (db.ts tx).
// Statements are described by the synchronous engine's prepared statements (PgStatement.describe: the translated
// text, values, prepared name), so both engines' SQL stays in one place while the conversion lasts.
// The parts: ./plan-statements.ts (the queued statements and their answers), ./plan-connection.ts (one plan's
// connection), ./plan-pool.ts (the pool and its metrics); here, which store runs what on its pool.
import { driveWith, runNow, transaction, type Gen } from '../op.js';
import type { DB } from '../db.js';
import { PlanPool, type PoolKind } from './plan-pool.js';

export { answerOf, SingleStatements, type Handle, type Queued } from './plan-statements.js';
export { PlanConnection } from './plan-connection.js';
export { PlanPool, POOL_KINDS, type PoolKind, type PoolKindStats } from './plan-pool.js';

const pools = new WeakMap<DB, PlanPool>();
/** Stores whose locking transactions run on their pool (runLocking). */
const locking = new WeakSet<DB>();

/**
 * `mta serve` on PostgreSQL: the pool that runs `db`'s plans sent with runPooled (null: none, all synchronous).
 * `locking`: the transactions that take the team's credit lock or an Idempotency-Key's lock, or write the rows the
 * submit turns and result batches lock, run there too (runLocking; MTA_PG_POOLED_TURNS on, with the turns).
 */
export function usePool(db: DB, pool: PlanPool | null, opts: { locking?: boolean } = {}): void {
  if (pool) pools.set(db, pool);
  else pools.delete(db);
  if (pool && opts.locking) locking.add(db);
  else locking.delete(db);
  // runPlan (op.ts) on the pool too, with the locking transactions (issue 38 item 3, "the flip"): every writer of the
  // rows those transactions lock is then there, none waiting for them on the synchronous connection.
  driveWith(db, pool && opts.locking ? (plan) => pool.run(plan, { db, durable: true, kind: 'other' }) : null);
}

/** The pool of `db`, if the service gave it one (PostgreSQL, MTA_PG_POOL_SIZE > 0). */
export const poolOf = (db: DB): PlanPool | undefined => pools.get(db);

/** Whether `db` runs its locking transactions on its pool (usePool `locking`). */
export const locksOnPool = (db: DB): boolean => locking.has(db) && pools.has(db);

/**
 * Runs a plan on `db`'s pool, asynchronously, on a connection of its own (not in the open group-commit turn, not on
 * the session that holds the job locks); without a pool (SQLite, the CLI, MTA_PG_POOL_SIZE=0) at once, synchronously.
 * Only for plans that need nothing of the synchronous connection's state (its open transaction, txMemo, turnState),
 * and made of single statements: a plan that opens a transaction fails with SingleStatements (see there why; the
 * transactions go through runLocking).
 */
export function runPooled<T>(db: DB, plan: Gen<T>, kind: PoolKind = 'claim'): Promise<T> {
  const p = pools.get(db);
  return p ? p.run(plan, { single: true, db, kind }) : runNow(plan);
}

/**
 * Runs a plan that takes the team's credit lock or writes rows a pooled transaction locks (a result batch, a cancel,
 * a queue action, feedback, a tracking hit) where those locks are held: on `db`'s pool when the service runs its
 * locking transactions there (usePool `locking`), its transactions allowed, the event loop free while it waits for a
 * lock; otherwise (SQLite, the CLI, MTA_PG_POOLED_TURNS=off) at once on the synchronous connection, where
 * every holder of those locks then runs too. Nothing of the synchronous connection's state is seen (a `runSync`
 * inside the plan throws). `durable`: its transactions' COMMITs wait for the WAL flush (work the API answers for);
 * otherwise lightTx's bargain (the delivery loop's results).
 */
export function runLocking<T>(db: DB, plan: Gen<T>, opts: { durable: boolean; kind?: PoolKind }): Promise<T> {
  const p = locksOnPool(db) ? pools.get(db) : undefined;
  return p ? p.run(plan, { db, durable: opts.durable, lazyRuns: true, kind: opts.kind }) : runNow(plan);
}

/**
 * runLocking for a plan of autocommitted statements that must be durable (the API answers after it): on the pool,
 * in one durable transaction (the pool's sessions are light); elsewhere as it is, as before.
 */
export function runLockingDurable<T>(db: DB, make: () => Gen<T>): Promise<T> {
  return locksOnPool(db) ? runLocking(db, transaction(db, make), { durable: true }) : runNow(make());
}
