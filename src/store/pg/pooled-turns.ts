// PostgreSQL: group-commit turns on the pool (docs/async-store.md step 2, issue 38 item 2). The requests that arrive
// in one event-loop turn share one transaction on one connection of the pool and are advanced together (lockstep,
// as ../lockstep.ts does on the synchronous connection): each runs to its next read that needs the server's answer
// and parks; one pipelined round trip answers every parked read (with the writes queued so far); then COMMIT. While
// a turn waits for the server the event loop goes on, and the next turn gathers and starts on another connection:
// several turns in flight. What one request after another gave for free is kept as on the synchronous connection:
// the turn's memo (txMemo, turnState: credits as this transaction's earlier charges left them, idempotency keys
// taken) is the connection's (PgDatabase.scope); a request that fails after writing, a server error in a round
// trip, a key taken twice or a deadlock makes the turn roll back and run its requests one after another, each in a
// savepoint (`strict`). Between turns the server keeps them apart: the team's credit lock and the idempotency key's
// lock (advisory, per transaction), primary keys.
import { isRetryable, RETRIES, type DB } from '../db.js';
import type { Gen } from '../op.js';
import { notInLockstep, runAfter, type TurnRequest } from '../lockstep.js';
import type { PgDatabase } from './database.js';
import { isConnectionLoss } from './errors.js';
import type { PlanConnection } from './plan-connection.js';
import { PlanPool } from './plan-pool.js';
import { answerOf, type Handle } from './plan-statements.js';

/** One request of a turn, parked on a pooled read (its Handle). */
interface Request extends TurnRequest<Handle> {
  make: () => Gen<unknown>;
}

interface Turn {
  requests: Request[];
  /** run one after another, each in a savepoint (after a failure, or whenever in doubt) */
  strict: boolean;
  /** whenCommitted's work, run once the turn is settled */
  settled: (() => void)[];
}

/** A server's refusal of a statement (not the connection lost): in a pipelined turn, it may be any request's. */
const isStatementError = (err: unknown): boolean =>
  /^[0-9A-Z]{5}$/.test(String((err as { code?: unknown }).code)) && !isConnectionLoss(err);

/**
 * The submit turns of one store on its pool. `depth`: turns in flight at most (each holds a connection until its
 * COMMIT is answered); the next one gathers requests meanwhile and goes when one is answered.
 */
export class PooledTurns {
  private open: Turn | null = null;
  private readonly flying = new Set<Turn>();
  /** Turns committed, and turns run again one request after another (tests, metrics). */
  committed = 0;
  replayed = 0;

  constructor(
    readonly db: PgDatabase,
    readonly pool: PlanPool,
    readonly depth: number,
  ) {}

  /** A request of the open turn (a new one if none gathers): answered after its COMMIT. */
  submit<T>(make: () => Gen<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let t = this.open;
      if (!t) {
        t = this.open = { requests: [], strict: false, settled: [] };
        setImmediate(() => this.start());
      }
      t.requests.push({ make, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  /** Turns gathering or in flight now. */
  get pending(): number {
    return this.flying.size + (this.open ? 1 : 0);
  }

  /** fn once every turn gathering or in flight now is settled; false (fn not kept) when there is none. */
  whenSettled(fn: () => void): boolean {
    const turns = [...this.flying, ...(this.open ? [this.open] : [])];
    if (!turns.length) return false;
    let left = turns.length;
    for (const t of turns) t.settled.push(() => --left === 0 && fn());
    return true;
  }

  private start(): void {
    const t = this.open;
    if (!t || this.flying.size >= this.depth) return;
    this.open = null;
    this.flying.add(t);
    void this.run(t).finally(() => {
      this.flying.delete(t);
      for (const fn of t.settled) fn();
      this.start();
    });
  }

  private async run(t: Turn): Promise<void> {
    let lease: Awaited<ReturnType<PlanPool['connection']>>;
    try {
      lease = await this.pool.connection({ db: this.db, kind: 'turn' });
    } catch (err) {
      return this.fail(t, err);
    }
    const { conn, release } = lease;
    let error: unknown;
    try {
      await this.attempts(t, conn);
    } catch (err) {
      error = err;
      await conn.rollback();
    } finally {
      release(error);
    }
    if (error !== undefined) return this.fail(t, PlanPool.failure(error));
    this.committed++;
    for (const r of t.requests) runAfter(r, !r.failed);
    for (const r of t.requests) if (!r.failed) r.resolve(r.result);
  }

  /** The turn's transaction, run again (strict) after a failure that undid it, up to RETRIES times. */
  private async attempts(t: Turn, conn: PlanConnection): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      // The pool's sessions commit without waiting for the WAL flush (lightTx's bargain); an accept is answered
      // once its COMMIT is durable.
      conn.begin('SET LOCAL synchronous_commit = on');
      try {
        if (t.strict) await this.oneByOne(t, conn);
        else await this.lockstep(t, conn);
        await conn.commit();
        return;
      } catch (caught) {
        // Lockstep: a server error in a round trip may be any request's; one after another, it is only its own.
        const err = !t.strict && isStatementError(caught) ? notInLockstep(String(caught)) : caught;
        if (!isRetryable(err) || attempt >= RETRIES) throw caught;
        await conn.rollback();
        t.strict = true;
        this.replayed++;
        for (const r of t.requests) {
          r.gen = r.parked = undefined;
          r.wrote = false;
          if (!r.failed) runAfter(r, false);
        }
      }
    }
  }

  /** Every request to its end, parked reads answered together, one round trip for all per step. */
  private async lockstep(t: Turn, conn: PlanConnection): Promise<void> {
    for (const r of t.requests) {
      if (r.failed) continue;
      r.gen = r.make();
      this.advance(conn, r, { first: true });
    }
    for (;;) {
      const parked = t.requests.filter((r) => r.parked && !r.failed);
      if (!parked.length) return;
      await conn.flush();
      for (const r of parked) {
        const h = r.parked!;
        r.parked = undefined;
        this.advance(conn, r, { value: answerOf(h) });
      }
    }
  }

  /**
   * Runs a request's plan on (from its start or with its read's answer) to its next read that needs the server, or
   * its end. Throws what makes the turn run again (a retryable error, a failure after writing).
   */
  private advance(conn: PlanConnection, r: Request, input: { first?: boolean; value?: unknown }): void {
    const gen = r.gen!;
    const before = conn.writes;
    conn.lockstep = true;
    conn.current = r;
    try {
      conn.step(() => {
        let s = input.first ? gen.next() : gen.next(input.value);
        for (;;) {
          if (s.done) {
            r.result = s.value;
            r.gen = undefined;
            return;
          }
          const a = conn.answerLater(s.value);
          if (a.park) {
            r.parked = a.park;
            return;
          }
          s = gen.next(a.value);
        }
      });
    } catch (err) {
      r.gen = undefined;
      r.parked = undefined;
      if (isRetryable(err)) throw err;
      r.failed = true;
      runAfter(r, false);
      r.reject(err);
      // Its writes are in the turn's transaction (no savepoint): the others run again without them.
      if (r.wrote || conn.writes !== before) throw notInLockstep('a request failed after writing');
    } finally {
      conn.lockstep = false;
      conn.current = undefined;
      if (conn.writes !== before) r.wrote = true;
    }
  }

  /** Each request in a savepoint of its own, one after another: a failing one leaves nothing and fails alone. */
  private async oneByOne(t: Turn, conn: PlanConnection): Promise<void> {
    for (const r of t.requests) {
      if (r.failed) continue;
      conn.current = r;
      try {
        r.result = await conn.scoped(r.make);
      } catch (err) {
        // A deadlock undoes the turn; a lost connection or a transaction the server aborted fails it.
        if (isRetryable(err) || isConnectionLoss(err) || (err as { code?: string }).code === '25P02') throw err;
        r.failed = true;
        runAfter(r, false);
        r.reject(err);
      } finally {
        conn.current = undefined;
      }
    }
  }

  /** Every request of the turn not failed yet fails with err (nothing of the turn was kept). */
  private fail(t: Turn, err: unknown): void {
    for (const r of t.requests) {
      if (r.failed) continue;
      r.failed = true;
      runAfter(r, false);
      r.reject(err);
    }
  }
}

const turnsOf = new WeakMap<DB, PooledTurns>();

/**
 * PostgreSQL with a pool: the group-commit turns of `db`'s plans (group-commit.ts groupPlan) run on it, `depth`
 * in flight at most; null: on the synchronous connection (the default).
 */
export function usePooledTurns(db: DB, pool: PlanPool | null, depth = 2): PooledTurns | null {
  if (!pool) {
    turnsOf.delete(db);
    return null;
  }
  const t = new PooledTurns(db as DB & PgDatabase, pool, Math.max(1, depth));
  turnsOf.set(db, t);
  return t;
}

/** The pooled turns of `db`, if it runs its group-commit plans on the pool. */
export const pooledTurnsOf = (db: DB): PooledTurns | undefined => turnsOf.get(db);
