// The asynchronous driver of store plans on PostgreSQL (docs/async-store.md, step 2): a plan (../op.ts) runs on one
// connection of a pool and the event loop goes on while the server answers. Writes whose answer the plan does not
// read (`fire`) and reads it will look at later (`getLater`) wait in a queue and go out just before the next
// statement that needs an answer; a transaction is BEGIN … COMMIT on the plan's connection (SAVEPOINTs when nested)
// and is run again after a deadlock with another transaction, as the synchronous engine does (db.ts tx).
// Statements are described by the synchronous engine's prepared statements (PgStatement.describe: the translated
// text, values, prepared name), so both engines' SQL stays in one place while the conversion lasts.
import pg from 'pg';
import { isRetryable, RETRIES, type DB, type Stmt } from '../db.js';
import { runPlan, type Gen, type Op, type RunResult } from '../op.js';
import { PgStatement } from './database.js';
import { isConnectionLoss, unreachable } from './errors.js';

// Integers (int8) and numerics as JS numbers, as the synchronous engine reads them (timestamps are ms).
const asNumber = (v: string | null) => (v === null ? null : Number(v));
const types = {
  getTypeParser: (oid: number, format?: string) =>
    oid === 20 || oid === 1700 ? asNumber : pg.types.getTypeParser(oid, format as 'text'),
};

type Described = ReturnType<PgStatement['describe']>;
/** A statement queued until the next one that needs an answer; `rows` once it has run. */
interface Queued {
  d: Described;
  done?: boolean;
  rows?: unknown[];
}

function describe(s: Stmt, args: unknown[], write: boolean): Described {
  if (!(s instanceof PgStatement)) throw new TypeError('the asynchronous driver runs PostgreSQL statements only');
  return s.describe(args, write);
}

const rowsOf = (d: Described, r: pg.QueryResult) =>
  d.array ? (r.rows as unknown[][]).map((row) => row[0]) : (r.rows as unknown[]);

/** A statement of our own (BEGIN, COMMIT, SAVEPOINT…): no parameters, not prepared. */
const raw = (text: string): Described => ({ text, values: [], array: false });

/** One plan's connection: its queue of statements not sent yet and its transaction depth. */
class PlanConnection {
  private queue: Queued[] = [];
  depth = 0;
  statements = 0;
  roundTrips = 0;

  /** `single`: statements one at a time, each its own (autocommit) transaction; a plan's `transaction` is refused. */
  constructor(
    private readonly c: pg.PoolClient,
    private readonly single = false,
  ) {}

  private async send(d: Described): Promise<pg.QueryResult> {
    this.statements++;
    const config = { text: d.text, values: d.values, name: d.name, rowMode: d.array ? 'array' : undefined, types };
    return this.c.query(config as pg.QueryConfig);
  }

  /**
   * Sends what is queued, then `last` if given, and answers `last`'s result; the first error is thrown (the plan
   * sees it at the statement that flushed). Inside a transaction they go out together (the client pipelines: one
   * round trip; after an error the server refuses the rest, and the transaction is rolled back). Outside one, one
   * after another, an error stopping the rest (autocommit: what follows a failed write is not run).
   */
  private async sendAll(last?: Described): Promise<pg.QueryResult | undefined> {
    const items = this.queue;
    this.queue = [];
    if (!items.length && !last) return undefined;
    if (this.depth === 0) {
      for (let i = 0; i < items.length; i++) {
        this.roundTrips++;
        let r: pg.QueryResult;
        try {
          r = await this.send(items[i].d);
        } catch (err) {
          this.queue.unshift(...items.slice(i + 1));
          throw err;
        }
        items[i].rows = rowsOf(items[i].d, r);
        items[i].done = true;
      }
      if (!last) return undefined;
      this.roundTrips++;
      return this.send(last);
    }
    this.roundTrips++;
    const sent = items.map((q) => this.send(q.d));
    if (last) sent.push(this.send(last));
    const settled = await Promise.allSettled(sent);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    items.forEach((q, i) => {
      q.rows = rowsOf(q.d, (settled[i] as PromiseFulfilledResult<pg.QueryResult>).value);
      q.done = true;
    });
    return last ? (settled[items.length] as PromiseFulfilledResult<pg.QueryResult>).value : undefined;
  }

  /** Sends what is queued (see sendAll). */
  async flush(): Promise<void> {
    await this.sendAll();
  }

  async exec(text: string): Promise<void> {
    await this.sendAll(raw(text));
  }

  async answer(op: Op): Promise<unknown> {
    switch (op.k) {
      case 'fire':
        this.queue.push({ d: describe(op.s, op.args, false) });
        return undefined;
      case 'getLater':
      case 'allLater': {
        const q: Queued = { d: describe(op.s, op.args, false) };
        this.queue.push(q);
        return op.k === 'getLater' ? { q, first: true } : { q, first: false };
      }
      case 'read': {
        const h = op.later as unknown as { q: Queued; first: boolean };
        if (!h.q.done) await this.flush();
        return h.first ? h.q.rows![0] : h.q.rows;
      }
      case 'get':
      case 'all': {
        const d = describe(op.s, op.args, false);
        const rows = rowsOf(d, (await this.sendAll(d))!);
        return op.k === 'get' ? rows[0] : rows;
      }
      case 'run': {
        const d = describe(op.s, op.args, true);
        const r = (await this.sendAll(d))!;
        const id = d.idCol ? ((r.rows[0] as Record<string, number> | undefined)?.[d.idCol] ?? 0) : 0;
        return { changes: r.rowCount ?? 0, lastInsertRowid: id } satisfies RunResult;
      }
      case 'exec':
        return this.exec(op.text);
      case 'tx':
        if (this.single) throw new SingleStatements();
        await this.flush();
        return this.depth === 0 ? this.transaction(op.body) : this.savepoint(op.body);
    }
  }

  /** A top-level transaction, run again (body called anew) after a deadlock or serialization failure. */
  private async transaction(body: () => Gen<unknown>): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      // BEGIN goes out with the transaction's first statement that needs an answer (or its COMMIT).
      this.queue.push({ d: raw('BEGIN') });
      this.depth = 1;
      try {
        const v = await this.drive(body(), true);
        await this.exec('COMMIT');
        return v;
      } catch (err) {
        this.queue = [];
        await this.c.query('ROLLBACK').catch(() => undefined);
        if (!isRetryable(err) || attempt >= RETRIES) throw err;
      } finally {
        this.depth = 0;
      }
    }
  }

  private async savepoint(body: () => Gen<unknown>): Promise<unknown> {
    const name = `mta_p${this.depth}`;
    await this.exec(`SAVEPOINT ${name}`);
    this.depth++;
    try {
      const v = await this.drive(body(), true);
      await this.exec(`RELEASE ${name}`);
      return v;
    } catch (err) {
      this.queue = [];
      await this.exec(`ROLLBACK TO ${name}`);
      await this.exec(`RELEASE ${name}`);
      throw err;
    } finally {
      this.depth--;
    }
  }

  /**
   * Runs a plan to its end: each yield answered, an error thrown into the plan; what is still queued sent last (in a
   * transaction's body: with its COMMIT or RELEASE, `queued` true).
   */
  async drive<T>(plan: Gen<T>, queued = false): Promise<T> {
    let step = plan.next();
    while (!step.done) {
      let value: unknown;
      try {
        value = await this.answer(step.value);
      } catch (err) {
        step = plan.throw(err);
        continue;
      }
      step = plan.next(value);
    }
    if (!queued) await this.flush();
    return step.value;
  }
}

/**
 * A plan sent with runPooled opened a transaction. While the synchronous connection still writes (until the flip,
 * docs/async-store.md step 3), a pooled transaction that holds a lock (a row it wrote, the team's credit lock) while
 * it waits for the event loop to send its next statement or its COMMIT can hang the node: the synchronous connection
 * blocks the event loop waiting for that lock, and PostgreSQL sees no cycle. Statements one at a time hold their
 * locks only while the server runs them.
 */
export class SingleStatements extends Error {
  constructor() {
    super(
      'runPooled runs single statements: a transaction on the pool could hold a lock the synchronous connection waits for',
    );
  }
}

/** Longest wait for a new connection before a plan fails as the database unreachable (503, back-off by the caller). */
const CONNECT_TIMEOUT_MS = 5000;

/** Plans run on PostgreSQL through a pool: several at once, none holding the event loop while it waits. */
export class PlanPool {
  private readonly pool: pg.Pool;
  /** Statements sent so far, round trips waited for, and plans waiting for the server now (tests, metrics). */
  statements = 0;
  roundTrips = 0;
  inFlight = 0;

  /**
   * `light`: every transaction of the pool's connections commits without waiting for its WAL flush
   * (synchronous_commit = off for the session): the delivery loop's bookkeeping, lightTx's bargain (store/queue.ts).
   */
  constructor(url: string, size = 8, opts: { light?: boolean } = {}) {
    this.pool = new pg.Pool({
      // Queries sent before the answers of the earlier ones (pg's pipeline mode): one round trip for a
      // transaction's queued writes and its next read (PlanConnection.sendAll).
      pipeline: true,
      connectionString: url,
      max: size,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      ...(opts.light ? { options: '-c synchronous_commit=off' } : {}),
    });
    // An idle connection the server dropped: the pool discards it; the next plan gets a new one.
    this.pool.on('error', () => undefined);
  }

  /**
   * Runs the plan on a connection of the pool. The database away (no connection, or the connection lost during the
   * plan) is an error isConnectionLoss knows (08006): the adapters answer 503 and the loops back off, as with the
   * synchronous engine; the next plan tries a new connection.
   */
  async run<T>(plan: Gen<T>, opts: { single?: boolean } = {}): Promise<T> {
    this.inFlight++;
    try {
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw unreachable((err as Error).message);
      }
      const c = new PlanConnection(client, opts.single);
      let broken: Error | undefined;
      try {
        return await c.drive(plan);
      } catch (err) {
        // A connection left inside a transaction, lost or failed is not handed to the next plan.
        if (c.depth > 0 || !(err as { code?: string }).code || isConnectionLoss(err)) broken = err as Error;
        if (isConnectionLoss(err) && !(err as { code?: string }).code) throw unreachable((err as Error).message);
        throw err;
      } finally {
        this.statements += c.statements;
        this.roundTrips += c.roundTrips;
        client.release(broken);
      }
    } finally {
      this.inFlight--;
    }
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}

const pools = new WeakMap<DB, PlanPool>();

/** `mta serve` on PostgreSQL: the pool that runs `db`'s plans sent with runPooled (null: none, all synchronous). */
export function usePool(db: DB, pool: PlanPool | null): void {
  if (pool) pools.set(db, pool);
  else pools.delete(db);
}

/** The pool of `db`, if the service gave it one (PostgreSQL, MTA_PG_POOL_SIZE > 0). */
export const poolOf = (db: DB): PlanPool | undefined => pools.get(db);

/**
 * Runs a plan on `db`'s pool, asynchronously, on a connection of its own (not in the open group-commit turn, not on
 * the session that holds the job locks); without a pool (SQLite, the CLI, MTA_PG_POOL_SIZE=0) as runPlan does. Only
 * for plans that need nothing of the synchronous connection's state (its open transaction, txMemo, turnState), and
 * made of single statements: a plan that opens a transaction fails with SingleStatements (see there why).
 */
export function runPooled<T>(db: DB, plan: Gen<T>): Promise<T> {
  const p = pools.get(db);
  return p ? p.run(plan, { single: true }) : runPlan(plan);
}
