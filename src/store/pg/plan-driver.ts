// The asynchronous driver of store plans on PostgreSQL (docs/async-store.md, step 2): a plan (../op.ts) runs on one
// connection of a pool and the event loop goes on while the server answers. Writes whose answer the plan does not
// read (`fire`) and reads it will look at later (`getLater`) wait in a queue and go out just before the next
// statement that needs an answer; a transaction is BEGIN … COMMIT on the plan's connection (SAVEPOINTs when nested)
// and is run again after a deadlock with another transaction, as the synchronous engine does (db.ts tx).
// Statements are described by the synchronous engine's prepared statements (PgStatement.describe: the translated
// text, values, prepared name), so both engines' SQL stays in one place while the conversion lasts.
import pg from 'pg';
import { isPg, isRetryable, RETRIES, type DB, type Stmt } from '../db.js';
import { runPlan, transaction, type Gen, type Op, type RunResult } from '../op.js';
import { notInLockstep } from '../lockstep.js';
import { PgStatement, type PgDatabase, type PlanScope } from './database.js';
import { isConnectionLoss, unreachable } from './errors.js';
import { answerOf as mergedAnswerOf, coalesce, type Query } from './coalesce.js';

// Integers (int8) and numerics as JS numbers, as the synchronous engine reads them (timestamps are ms).
const asNumber = (v: string | null) => (v === null ? null : Number(v));
const types = {
  getTypeParser: (oid: number, format?: string) =>
    oid === 20 || oid === 1700 ? asNumber : pg.types.getTypeParser(oid, format as 'text'),
};

type Described = ReturnType<PgStatement['describe']>;
/** A statement queued until the next one that needs an answer; `rows` (and `count`) once it has run. */
export interface Queued {
  d: Described;
  /** the connection whose queue holds it (a read made in another transaction is sent again here) */
  conn?: PlanConnection;
  /** sent to the server (its answer may not be back yet) */
  sent?: boolean;
  /** a write whose outcome nobody reads (fire): an `ON CONFLICT DO NOTHING` INSERT may merge (./coalesce.ts) */
  blind?: boolean;
  done?: boolean;
  rows?: unknown[];
  count?: number;
}
/** What getLater/allLater answer on the pool: the queued read, and whether its first row or all rows are wanted. */
export interface Handle {
  q: Queued;
  first: boolean;
}

function describe(s: Stmt, args: unknown[], write: boolean): Described {
  if (!(s instanceof PgStatement)) throw new TypeError('the asynchronous driver runs PostgreSQL statements only');
  return s.describe(args, write);
}

const rowsOf = (d: Described, r: pg.QueryResult) =>
  d.array ? (r.rows as unknown[][]).map((row) => row[0]) : (r.rows as unknown[]);

/** A statement of our own (BEGIN, COMMIT, SAVEPOINT…): no parameters, not prepared. */
const raw = (text: string): Described => ({ text, values: [], array: false });

/** The answer of a read once its round trip is back. */
export const answerOf = (h: Handle): unknown => (h.first ? h.q.rows![0] : h.q.rows);

/** What run() answers: the changed rows and the inserted id, from the write's answer. */
const runResultOf = (q: Queued): RunResult => {
  const id = q.d.idCol ? ((q.rows?.[0] as Record<string, number> | undefined)?.[q.d.idCol] ?? 0) : 0;
  return { changes: q.count ?? 0, lastInsertRowid: id };
};

const seconds = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e9;

/** Transactions begun on any connection: what txMemo remembers is kept per (connection, transaction). */
let serials = 0;

/** One plan's connection: its queue of statements not sent yet and its transaction depth. */
export class PlanConnection implements PlanScope {
  private queue: Queued[] = [];
  depth = 0;
  statements = 0;
  roundTrips = 0;
  /** seconds spent awaiting the server's answers, and of those the COMMITs' (PoolKindStats) */
  answerSeconds = 0;
  commitSeconds = 0;
  txSerial = 0;
  writes = 0;
  lockstep = false;
  current?: unknown;

  /**
   * `single`: statements one at a time, each its own (autocommit) transaction; a plan's `transaction` is refused.
   * `db`: the store whose plans run here; while a step of one runs, the store's code sees this connection's
   * transaction and memos through it (PgDatabase.scope), and its synchronous statements refuse to run.
   */
  constructor(
    private readonly c: pg.PoolClient,
    private readonly single = false,
    readonly db?: PgDatabase,
    readonly family: object = {},
    /** its top-level transactions' COMMITs wait for the WAL flush (the pool's sessions are light) */
    private readonly durable = false,
    /**
     * Inside its top-level transactions, a `run` is queued like a `fire` (no round trip of its own), its outcome read
     * from its answer once back; a plan that reads it earlier makes the transaction run again with each `run`
     * waited for (`eager`). The synchronous engine defers its writes alike (PgStatement.run).
     */
    private readonly lazyRuns = false,
  ) {}
  /** this transaction runs again with each `run` waited for (a plan read a write's outcome before its answer) */
  private eager = false;
  private readEarly = false;

  /** fn (a step of a plan: synchronous) with the store's code seeing this connection (PgDatabase.scope). */
  step<T>(fn: () => T): T {
    const db = this.db;
    if (!db) return fn();
    const before = db.scope;
    db.scope = this;
    try {
      return fn();
    } finally {
      db.scope = before;
    }
  }

  private async send(d: Described): Promise<pg.QueryResult> {
    this.statements++;
    const config = { text: d.text, values: d.values, name: d.name, rowMode: d.array ? 'array' : undefined, types };
    return this.c.query(config as pg.QueryConfig);
  }

  /** Queues a statement for the next round trip (a write counts: what was read may no longer be current). */
  enqueue(d: Described, write = false, blind = false): Queued {
    if (write) this.writes++;
    const q: Queued = { d, conn: this, blind };
    this.queue.push(q);
    return q;
  }

  /** Whether statements wait for the next round trip. */
  get pending(): boolean {
    return this.queue.length > 0;
  }

  /**
   * Sends what is queued, then `last` if given, and answers `last`'s result; the first error is thrown (the plan
   * sees it at the statement that flushed). Inside a transaction they go out together (the client pipelines: one
   * round trip; after an error the server refuses the rest, and the transaction is rolled back). Outside one, one
   * after another, an error stopping the rest (autocommit: what follows a failed write is not run).
   */
  private async sendAll(last?: Described): Promise<pg.QueryResult | undefined> {
    const t0 = process.hrtime.bigint();
    try {
      return await this.sendQueued(last);
    } finally {
      const s = seconds(t0);
      this.answerSeconds += s;
      if (last?.text === 'COMMIT') this.commitSeconds += s;
    }
  }

  private async sendQueued(last?: Described): Promise<pg.QueryResult | undefined> {
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
        settle(items[i], r);
      }
      if (!last) return undefined;
      this.roundTrips++;
      return this.send(last);
    }
    this.roundTrips++;
    // The queued INSERTs of one prepared statement as one multi-row INSERT, as the synchronous client sends them
    // (./coalesce.ts: the same rules; a merged statement fails as one, which a turn answers by running its requests
    // one after another, each in a savepoint that nothing merges across).
    const plan = this.merge(items);
    for (const q of items) q.sent = true;
    const sent = this.corked(() => {
      const all = plan.batch.map((d) => this.send(d));
      if (last) all.push(this.send(last));
      return all;
    });
    const settled = await Promise.allSettled(sent);
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    items.forEach((q, i) => {
      const at = plan.place[i];
      settle(q, mergedAnswerOf((settled[at.at] as PromiseFulfilledResult<pg.QueryResult>).value, at));
    });
    return last ? (settled[plan.batch.length] as PromiseFulfilledResult<pg.QueryResult>).value : undefined;
  }

  /**
   * fn's statements written to the socket as one (pg writes each pipelined query's messages on their own, uncorking
   * after each: one write, one TCP segment and one read on the server per statement).
   */
  private corked<T>(fn: () => T): T {
    const stream = (this.c as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection
      ?.stream;
    stream?.cork?.();
    try {
      return fn();
    } finally {
      stream?.uncork?.();
    }
  }

  /** The statements to send for `items` (their INSERTs merged) and where each one's answer is. */
  private merge(items: Queued[]): { batch: Described[]; place: { at: number; row: number; of: number }[] } {
    if (items.length < 2)
      return { batch: items.map((q) => q.d), place: items.map((_, i) => ({ at: i, row: 0, of: 1 })) };
    const parents = this.db?.client.parents;
    const qs: Query[] = items.map((q) => ({ ...q.d, blind: q.blind }));
    const plan = coalesce(qs, (table) => parents?.get(table) ?? (parents ? NO_PARENTS : undefined));
    const own = new Map(qs.map((q, i) => [q, items[i].d]));
    return {
      batch: plan.batch.map((b) => own.get(b) ?? { text: b.text, values: b.values, name: b.name, array: !!b.array }),
      place: plan.place,
    };
  }

  /** Sends what is queued (see sendAll). */
  async flush(): Promise<void> {
    await this.sendAll();
  }

  async exec(text: string): Promise<void> {
    await this.sendAll(raw(text));
  }

  /** A read made in this transaction and not answered yet, or made elsewhere and not answered: sent again here. */
  private own(h: Handle): Handle {
    if (typeof h === 'function' || !h.q)
      throw new TypeError('a read made on the synchronous connection, read on the pool');
    return h.q.done || h.q.conn === this ? h : { q: this.enqueue(h.q.d), first: h.first };
  }

  async answer(op: Op): Promise<unknown> {
    switch (op.k) {
      case 'fire':
        this.enqueue(describe(op.s, op.args, false), true, true);
        return undefined;
      case 'getLater':
      case 'allLater':
        return { q: this.enqueue(describe(op.s, op.args, false)), first: op.k === 'getLater' } satisfies Handle;
      case 'read': {
        const h = this.own(op.later as unknown as Handle);
        if (!h.q.done) await this.flush();
        return answerOf(h);
      }
      case 'get':
      case 'all': {
        const d = describe(op.s, op.args, false);
        const rows = rowsOf(d, (await this.sendAll(d))!);
        return op.k === 'get' ? rows[0] : rows;
      }
      case 'run': {
        const d = describe(op.s, op.args, true);
        if (this.lazyRuns && !this.eager && this.depth > 0) return this.lazyRun(this.enqueue(d, true));
        this.writes++;
        const q: Queued = { d };
        settle(q, (await this.sendAll(d))!);
        return runResultOf(q);
      }
      case 'exec':
        this.writes++;
        return this.exec(op.text);
      case 'tx':
        if (this.single) throw new SingleStatements();
        await this.flush();
        return this.depth === 0 ? this.transaction(op.body) : this.savepoint(op.body);
    }
  }

  /**
   * Answers `op` without a round trip where it can (a pooled turn's lockstep, ./pooled-turns.ts): writes and reads
   * for later are queued, a read already answered is answered; `{ park }` for a read that needs this connection's
   * next round trip. A write's outcome (run) is read from its answer once it is back; read before (a plan that looks
   * at `changes` at once) it fails the request with REPLAY, and the turn runs its requests one after another.
   */
  answerLater(op: Op): { value?: unknown; park?: Handle } {
    switch (op.k) {
      case 'fire':
        this.enqueue(describe(op.s, op.args, false), true, true);
        return {};
      case 'getLater':
      case 'allLater':
        return { value: { q: this.enqueue(describe(op.s, op.args, false)), first: op.k === 'getLater' } };
      case 'read': {
        const h = this.own(op.later as unknown as Handle);
        return h.q.done ? { value: answerOf(h) } : { park: h };
      }
      case 'get':
      case 'all':
        return { park: { q: this.enqueue(describe(op.s, op.args, false)), first: op.k === 'get' } };
      case 'run': {
        const q = this.enqueue(describe(op.s, op.args, true), true);
        const done = () => {
          if (!q.done) throw notInLockstep("a write's outcome read before its round trip");
          return runResultOf(q);
        };
        return {
          value: {
            get changes() {
              return done().changes;
            },
            get lastInsertRowid() {
              return done().lastInsertRowid;
            },
          } satisfies RunResult,
        };
      }
      case 'exec':
        this.enqueue(raw(op.text), true);
        return {};
      case 'tx':
        throw notInLockstep("a transaction inside a turn's request");
    }
  }

  /** A queued write's outcome, read once its answer is back; read before, the transaction runs again (eager). */
  private lazyRun(q: Queued): RunResult {
    const done = () => {
      if (!q.done) {
        this.readEarly = true;
        throw notInLockstep("a write's outcome read before its round trip");
      }
      return runResultOf(q);
    };
    return {
      get changes() {
        return done().changes;
      },
      get lastInsertRowid() {
        return done().lastInsertRowid;
      },
    };
  }

  /** Opens a transaction whose BEGIN (and `first` statements) go out with its first round trip. */
  begin(...first: string[]): void {
    this.queue = [];
    this.enqueue(raw('BEGIN'));
    for (const text of first) this.enqueue(raw(text));
    this.depth = 1;
    this.txSerial = ++serials;
  }

  /** Sends what is queued with the COMMIT; the transaction is over whatever the answer. */
  async commit(): Promise<void> {
    try {
      await this.exec('COMMIT');
    } finally {
      this.depth = 0;
    }
  }

  /** Drops what is queued and rolls the open transaction back (nothing thrown: a lost connection is discarded). */
  async rollback(): Promise<void> {
    this.queue = [];
    this.depth = 0;
    await this.c.query('ROLLBACK').catch(() => undefined);
  }

  /** body's plan in a savepoint of the open transaction (rolled back to it if the plan fails). */
  scoped<T>(body: () => Gen<T>): Promise<T> {
    return this.savepoint(body) as Promise<T>;
  }

  /** A top-level transaction, run again (body called anew) after a deadlock or serialization failure. */
  private async transaction(body: () => Gen<unknown>): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      // BEGIN goes out with the transaction's first statement that needs an answer (or its COMMIT).
      if (this.durable) this.begin('SET LOCAL synchronous_commit = on');
      else this.begin();
      try {
        const v = await this.drive(body(), true);
        // A write's outcome read early (and the error caught by the plan): run again, each write waited for.
        if (this.readEarly) throw notInLockstep("a write's outcome read before its round trip");
        await this.exec('COMMIT');
        this.eager = false;
        return v;
      } catch (err) {
        this.queue = [];
        await this.c.query('ROLLBACK').catch(() => undefined);
        if (this.readEarly && !this.eager) {
          this.readEarly = false;
          this.eager = true;
          attempt--; // not a failure: the same attempt, waiting for each write
          continue;
        }
        this.eager = false;
        if (!isRetryable(err) || attempt >= RETRIES) throw err;
      } finally {
        this.depth = 0;
      }
    }
  }

  private async savepoint(body: () => Gen<unknown>): Promise<unknown> {
    const name = `mta_p${this.depth}`;
    // Sent with the body's first round trip; a body that fails before any has nothing to roll back.
    const sp = this.enqueue(raw(`SAVEPOINT ${name}`));
    this.depth++;
    try {
      const v = await this.drive(body(), true);
      await this.exec(`RELEASE ${name}`);
      return v;
    } catch (err) {
      // What was queued before the savepoint (a transaction's BEGIN not sent yet) stays; the body's writes go.
      const at = this.queue.indexOf(sp);
      this.queue = at >= 0 ? this.queue.slice(0, at) : [];
      if (sp.sent) {
        this.enqueue(raw(`ROLLBACK TO ${name}`));
        await this.exec(`RELEASE ${name}`);
      }
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
    let step = this.step(() => plan.next());
    while (!step.done) {
      let value: unknown;
      try {
        value = await this.answer(step.value);
      } catch (err) {
        step = this.step(() => plan.throw(err));
        continue;
      }
      step = this.step(() => plan.next(value));
    }
    if (!queued) await this.flush();
    return step.value;
  }
}

const NO_PARENTS: ReadonlySet<string> = new Set();

function settle(q: Queued, r: { rows?: unknown[]; rowCount?: number | null }): void {
  q.rows = rowsOf(q.d, r as pg.QueryResult);
  q.count = r.rowCount ?? 0;
  q.done = true;
}

/**
 * A plan sent with runPooled opened a transaction. A pooled transaction that holds a lock (a row it wrote, the team's
 * credit lock) while it waits for the event loop to send its next statement or its COMMIT can hang the node if the
 * synchronous connection waits for that lock: it blocks the event loop, and PostgreSQL sees no cycle. Statements one
 * at a time hold their locks only while the server runs them. The transactions that take those locks run through
 * runLocking, which allows them where every other holder of the same locks is on the pool too.
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

/**
 * What a connection of the pool is taken for (metrics, issue 38 session 21): a submit turn, the delivery loop's
 * single statements (claims, lease confirmations, next due time, wake-ups), a result batch, anything else.
 */
export const POOL_KINDS = ['turn', 'claim', 'result', 'other'] as const;
export type PoolKind = (typeof POOL_KINDS)[number];
/** Per kind: connections taken, the time waited for them and held, the statements and round trips sent on them. */
export interface PoolKindStats {
  acquires: number;
  waitSeconds: number;
  holdSeconds: number;
  /** of the time held: waiting for the server's answers (its round trips, with the event loop's delay to read them) */
  answerSeconds: number;
  /** of that: waiting for COMMITs (with a durable one's WAL flush) */
  commitSeconds: number;
  statements: number;
  roundTrips: number;
}

/** Plans run on PostgreSQL through a pool: several at once, none holding the event loop while it waits. */
export class PlanPool {
  private readonly pool: pg.Pool;
  /** Statements sent so far, round trips waited for, and plans waiting for the server now (tests, metrics). */
  statements = 0;
  roundTrips = 0;
  inFlight = 0;
  /** Per kind of use (PoolKind): see PoolKindStats. */
  readonly byKind = Object.fromEntries(
    POOL_KINDS.map((k) => [
      k,
      { acquires: 0, waitSeconds: 0, holdSeconds: 0, answerSeconds: 0, commitSeconds: 0, statements: 0, roundTrips: 0 },
    ]),
  ) as Record<PoolKind, PoolKindStats>;
  /** Connections held now, and their integral over time (connection-seconds; busy on average = its rate). */
  busy = 0;
  private busyArea = 0;
  private busySince = process.hrtime.bigint();

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
   * A connection of the pool (`db`: the store whose plans run on it, see PlanConnection). The database away is an
   * error isConnectionLoss knows (08006). `release(err)` hands it back: with the error that ended its plan, a
   * connection left inside a transaction, lost or failed is not given to the next plan.
   */
  async connection(
    opts: { single?: boolean; db?: DB; durable?: boolean; lazyRuns?: boolean; kind?: PoolKind } = {},
  ): Promise<{ conn: PlanConnection; release: (err?: unknown) => void }> {
    let client: pg.PoolClient;
    const stats = this.byKind[opts.kind ?? 'other'];
    const asked = process.hrtime.bigint();
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw unreachable((err as Error).message);
    } finally {
      stats.waitSeconds += seconds(asked);
    }
    const taken = process.hrtime.bigint();
    stats.acquires++;
    this.held(1);
    // pg-pool listens for a connection's 'error' only while it is idle: checked out, a connection the server ends
    // between two statements (57P01 at a restart) would emit an error nobody hears, which ends the process. Heard
    // here, it marks the connection broken (its next statement fails as the database away).
    let lost: Error | undefined;
    const onError = (e: Error) => {
      lost = e;
    };
    client.on('error', onError);
    const db = opts.db && isPg(opts.db) ? opts.db : undefined;
    const conn = new PlanConnection(client, opts.single, db, this, opts.durable, opts.lazyRuns);
    let released = false;
    const release = (err?: unknown) => {
      if (released) return;
      released = true;
      client.off('error', onError);
      this.statements += conn.statements;
      this.roundTrips += conn.roundTrips;
      stats.statements += conn.statements;
      stats.roundTrips += conn.roundTrips;
      stats.holdSeconds += seconds(taken);
      stats.answerSeconds += conn.answerSeconds;
      stats.commitSeconds += conn.commitSeconds;
      this.held(-1);
      const broken = err !== undefined && (conn.depth > 0 || !(err as { code?: string }).code || isConnectionLoss(err));
      client.release(broken ? (err as Error) : lost);
    };
    return { conn, release };
  }

  /** Connections held: `d` more (or fewer), the time-integral kept up to now. */
  private held(d: number): void {
    const now = process.hrtime.bigint();
    this.busyArea += (this.busy * Number(now - this.busySince)) / 1e9;
    this.busySince = now;
    this.busy += d;
  }

  /** Connection-seconds held so far (its rate over an interval: connections busy on average). */
  get busySeconds(): number {
    return this.busyArea + (this.busy * Number(process.hrtime.bigint() - this.busySince)) / 1e9;
  }

  /** The error a plan on the pool fails with: a connection lost without a SQLSTATE as the database unreachable. */
  static failure(err: unknown): unknown {
    return isConnectionLoss(err) && !(err as { code?: string }).code ? unreachable((err as Error).message) : err;
  }

  /**
   * Runs the plan on a connection of the pool. The database away (no connection, or the connection lost during the
   * plan) is an error isConnectionLoss knows (08006): the adapters answer 503 and the loops back off, as with the
   * synchronous engine; the next plan tries a new connection. `db`: the store the plan reads (PgDatabase.scope).
   */
  async run<T>(
    plan: Gen<T>,
    opts: { single?: boolean; db?: DB; durable?: boolean; lazyRuns?: boolean; kind?: PoolKind } = {},
  ): Promise<T> {
    this.inFlight++;
    try {
      const { conn, release } = await this.connection(opts);
      let failed: unknown;
      try {
        return await conn.drive(plan);
      } catch (err) {
        failed = err;
        throw PlanPool.failure(err);
      } finally {
        release(failed);
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
}

/** The pool of `db`, if the service gave it one (PostgreSQL, MTA_PG_POOL_SIZE > 0). */
export const poolOf = (db: DB): PlanPool | undefined => pools.get(db);

/** Whether `db` runs its locking transactions on its pool (usePool `locking`). */
export const locksOnPool = (db: DB): boolean => locking.has(db) && pools.has(db);

/**
 * Runs a plan on `db`'s pool, asynchronously, on a connection of its own (not in the open group-commit turn, not on
 * the session that holds the job locks); without a pool (SQLite, the CLI, MTA_PG_POOL_SIZE=0) as runPlan does. Only
 * for plans that need nothing of the synchronous connection's state (its open transaction, txMemo, turnState), and
 * made of single statements: a plan that opens a transaction fails with SingleStatements (see there why; the
 * transactions go through runLocking).
 */
export function runPooled<T>(db: DB, plan: Gen<T>, kind: PoolKind = 'claim'): Promise<T> {
  const p = pools.get(db);
  return p ? p.run(plan, { single: true, db, kind }) : runPlan(plan);
}

/**
 * Runs a plan that takes the team's credit lock or writes rows a pooled transaction locks (a result batch, a cancel,
 * a queue action, feedback, a tracking hit) where those locks are held: on `db`'s pool when the service runs its
 * locking transactions there (usePool `locking`), its transactions allowed, the event loop free while it waits for a
 * lock; otherwise (SQLite, the CLI, MTA_PG_POOLED_TURNS=off) as runPlan does, on the synchronous connection, where
 * every holder of those locks then runs too. Nothing of the synchronous connection's state is seen (a `runSync`
 * inside the plan throws). `durable`: its transactions' COMMITs wait for the WAL flush (work the API answers for);
 * otherwise lightTx's bargain (the delivery loop's results).
 */
export function runLocking<T>(db: DB, plan: Gen<T>, opts: { durable: boolean; kind?: PoolKind }): Promise<T> {
  const p = locksOnPool(db) ? pools.get(db) : undefined;
  return p ? p.run(plan, { db, durable: opts.durable, lazyRuns: true, kind: opts.kind }) : runPlan(plan);
}

/**
 * runLocking for a plan of autocommitted statements that must be durable (the API answers after it): on the pool,
 * in one durable transaction (the pool's sessions are light); elsewhere as it is, as before.
 */
export function runLockingDurable<T>(db: DB, make: () => Gen<T>): Promise<T> {
  return locksOnPool(db) ? runLocking(db, transaction(db, make), { durable: true }) : runPlan(make());
}
