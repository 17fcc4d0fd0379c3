// The store's API as plans of statements (issue 38, docs/async-store.md). A store function is a generator that
// yields each statement it needs (`yield* get(stmt, …)`) and receives the answer; a driver runs the plan:
// - runSync: answers each statement at once on the engine's synchronous connection (better-sqlite3; during the
//   conversion the PostgreSQL sync client too). No other JavaScript runs between two statements of a plan, so a
//   plan keeps the atomicity of the synchronous code it replaces, and SQLite gains no thread hop and no microtask.
// - runPlan: answered as a promise; the adapters' entry point. On PostgreSQL with the service's pool (driveWith) the
//   plan runs there, asynchronously, its statements sent together where they can be; elsewhere as runSync.
// The same text of a store function serves both engines and both drivers: what changes is who answers the yields.
import {
  allLater as allLaterSync,
  fire as fireSync,
  getLater as getLaterSync,
  tx as txSync,
  type DB,
  type Stmt,
} from './db.js';

/** What a plan yields: one statement (with its arguments), or a transaction around a sub-plan. */
export type Op =
  | { k: 'get' | 'all' | 'run' | 'fire' | 'getLater' | 'allLater'; s: Stmt; args: unknown[]; atCommit?: boolean }
  | { k: 'exec'; db: DB; text: string }
  | { k: 'read'; later: Later<unknown> }
  | { k: 'tx'; db: DB; body: () => Gen<unknown> };

/** A plan answering T. */
export type Gen<T> = Generator<Op, T, unknown>;

/** A read sent with the plan's next statement that needs an answer (PostgreSQL); `yield* read(later)` answers it. */
export interface Later<T> {
  readonly __later: T;
}

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/** The first row the statement answers. */
export function* get<R>(s: Stmt<R>, ...args: unknown[]): Gen<R | undefined> {
  return (yield { k: 'get', s, args }) as R | undefined;
}
/** Every row the statement answers. */
export function* all<R>(s: Stmt<R>, ...args: unknown[]): Gen<R[]> {
  return (yield { k: 'all', s, args }) as R[];
}
/** A write, with its count of changed rows and the id of the row it inserted. */
export function* run(s: Stmt, ...args: unknown[]): Gen<RunResult> {
  return (yield { k: 'run', s, args }) as RunResult;
}
/** A write whose outcome nobody reads (db.ts fire: PostgreSQL may send it with a later statement). */
export function* fire(s: Stmt, ...args: unknown[]): Gen<void> {
  yield { k: 'fire', s, args };
}
/**
 * A fire sent with its transaction's COMMIT, in the same round trip, where the driver can (a pooled turn's requests
 * in lockstep, ./pg/plan-connection.ts answerLater); elsewhere a fire. For a lock whose hold must not include a trip
 * to this process and back (store/credits.ts: the team's credit lock of a pooled turn).
 */
export function* fireAtCommit(s: Stmt, ...args: unknown[]): Gen<void> {
  yield { k: 'fire', s, args, atCommit: true };
}
/** Statements without arguments or answers (DDL, several at once on SQLite). */
export function* exec(db: DB, text: string): Gen<void> {
  yield { k: 'exec', db, text };
}
/** getLater's plan form: the row, read with the next statement that needs an answer; `yield* read(it)` for it. */
export function* getLater<R>(s: Stmt<R>, ...args: unknown[]): Gen<Later<R | undefined>> {
  return (yield { k: 'getLater', s, args }) as Later<R | undefined>;
}
/** allLater's plan form. */
export function* allLater<R>(s: Stmt<R>, ...args: unknown[]): Gen<Later<R[]>> {
  return (yield { k: 'allLater', s, args }) as Later<R[]>;
}
/** The answer of a read sent later. */
export function* read<T>(later: Later<T>): Gen<T> {
  return (yield { k: 'read', later }) as T;
}
/**
 * body in a transaction (db.ts tx: IMMEDIATE, a savepoint when nested; PostgreSQL runs a top-level one again after a
 * deadlock with another node, so body must only touch the store and is called anew for each attempt).
 */
export function* transaction<T>(db: DB, body: () => Gen<T>): Gen<T> {
  return (yield { k: 'tx', db, body }) as T;
}

/** Answers one yielded operation on the synchronous engine. */
export function answer(op: Op): unknown {
  switch (op.k) {
    case 'get':
      return op.s.get(...op.args);
    case 'all':
      return op.s.all(...op.args);
    case 'run':
      return op.s.run(...op.args);
    case 'fire':
      return fireSync(op.s, ...op.args);
    case 'getLater':
      return getLaterSync(op.s, ...op.args);
    case 'allLater':
      return allLaterSync(op.s, ...op.args);
    case 'read':
      return (op.later as unknown as () => unknown)();
    case 'exec':
      op.db.exec(op.text);
      return undefined;
    case 'tx':
      return txSync(op.db, () => runSync(op.body()));
  }
}

/**
 * Runs a plan on the synchronous engine, to its end, now. An error of a statement is thrown into the plan (its
 * try/catch sees it, as it would a synchronous call's); one the plan does not catch is thrown from here.
 */
export function runSync<T>(plan: Gen<T>): T {
  let step = plan.next();
  while (!step.done) {
    let value: unknown;
    try {
      value = answer(step.value);
    } catch (err) {
      step = plan.throw(err);
      continue;
    }
    step = plan.next(value);
  }
  return step.value;
}

/** A plan-making store function as a synchronous one (for callers that stay synchronous: the delivery loop's tick). */
export const synced =
  <A extends unknown[], T>(plan: (...a: A) => Gen<T>) =>
  (...a: A): T =>
    runSync(plan(...a));

/** Runs `db`'s plans asynchronously (PostgreSQL: store/pg/plan-driver.ts usePool, on its pool). */
export type AsyncDriver = <T>(plan: Gen<T>) => Promise<T>;
const drivers = new WeakMap<object, AsyncDriver>();

/** `db`'s plans run by runPlan go to `driver` (null: answered at once on the synchronous engine, as before). */
export function driveWith(db: DB, driver: AsyncDriver | null): void {
  if (driver) drivers.set(db, driver);
  else drivers.delete(db);
}

/**
 * Runs a plan of `db` and answers as a promise: the adapters' entry point. On PostgreSQL in `mta serve` with the pool
 * and MTA_PG_POOLED_TURNS on (driveWith), on a connection of the pool, the event loop free while the server answers
 * (a `transaction` in it durable); elsewhere (SQLite, the CLI, MTA_PG_POOL_SIZE=0, the switch off) at once on the
 * synchronous engine (runNow).
 */
export function runPlan<T>(db: DB, plan: Gen<T>): Promise<T> {
  const driver = drivers.get(db);
  return driver ? driver(plan) : runNow(plan);
}

/**
 * Runs a plan on the synchronous engine now and answers as a promise, whatever the store's driver: for what must stay
 * on the synchronous connection (store/locks.ts: the jobs' session locks belong to it).
 */
export function runNow<T>(plan: Gen<T>): Promise<T> {
  try {
    return Promise.resolve(runSync(plan));
  } catch (err) {
    return Promise.reject(err);
  }
}
