// One plan's connection of the pool (./plan-driver.ts): its queue of statements sent with the next round trip (merged,
// pipelined, corked), the answers of a plan's yields, its transactions and savepoints.
import pg from 'pg';
import { isRetryable, RETRIES } from '../db.js';
import type { Gen, Op, RunResult } from '../op.js';
import { notInLockstep } from '../lockstep.js';
import type { PgDatabase, PlanScope } from './database.js';
import { answerOf as mergedAnswerOf, coalesce, type Query } from './coalesce.js';
import {
  answerOf,
  describe,
  lazyResult,
  NO_PARENTS,
  raw,
  rowsOf,
  runResultOf,
  seconds,
  settle,
  SingleStatements,
  types,
  type Described,
  type Handle,
  type Queued,
} from './plan-statements.js';

/** Transactions begun on any connection: what txMemo remembers is kept per (connection, transaction). */
let serials = 0;

/** One plan's connection: its queue of statements not sent yet and its transaction depth. */
export class PlanConnection implements PlanScope {
  private queue: Queued[] = [];
  /** fireAtCommit's statements in a pooled turn: sent after the queue, with the COMMIT (commit()) */
  private tail: Queued[] = [];
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
  /** the session's synchronous_commit set on for a write outside a transaction (send), to be reset at release */
  durableSession = false;
  /** what waits for the COMMIT of the open transaction begun by transaction() (whenCommitted); null outside one */
  private committed: (() => void)[] | null = null;

  /**
   * fn after the COMMIT of the open transaction (PlanScope.whenCommitted): one a plan opened (runPlan, runLocking),
   * not a pooled turn's (pooled-turns.ts answers for those); false outside one.
   */
  whenCommitted(fn: () => void): boolean {
    if (!this.committed || this.lockstep) return false;
    this.committed.push(fn);
    return true;
  }

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
    // A write outside a transaction on a durable connection (runPlan: the API answers after it): the session waits
    // for the WAL flush from now on, as the synchronous connection does (the pool's sessions are light; the pool
    // sets it back when the connection returns, PlanPool.connection). Sent with the write, no round trip of its own.
    if (this.durable && this.depth === 0 && !this.durableSession && !/^\s*(SELECT|SHOW)\b/i.test(d.text)) {
      this.durableSession = true;
      this.statements++;
      void this.c.query('SET synchronous_commit = on').catch(() => undefined);
    }
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
        // fireAtCommit in the turn's transaction: sent with its COMMIT (elsewhere, as a fire)
        if (op.atCommit && this.depth === 1) this.tail.push(this.queue.pop()!);
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
        return { value: lazyResult(done) };
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
    return lazyResult(done);
  }

  /** Opens a transaction whose BEGIN (and `first` statements) go out with its first round trip. */
  begin(...first: string[]): void {
    this.queue = [];
    this.tail = [];
    this.enqueue(raw('BEGIN'));
    for (const text of first) this.enqueue(raw(text));
    this.depth = 1;
    this.txSerial = ++serials;
  }

  /** Sends what is queued, then fireAtCommit's, with the COMMIT; the transaction ends whatever the answer. */
  async commit(): Promise<void> {
    this.queue.push(...this.tail);
    this.tail = [];
    try {
      await this.exec('COMMIT');
    } finally {
      this.depth = 0;
    }
  }

  /** Drops what is queued and rolls the open transaction back (nothing thrown: a lost connection is discarded). */
  async rollback(): Promise<void> {
    this.queue = [];
    this.tail = [];
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
      this.committed = [];
      try {
        const v = await this.drive(body(), true);
        // A write's outcome read early (and the error caught by the plan): run again, each write waited for.
        if (this.readEarly) throw notInLockstep("a write's outcome read before its round trip");
        await this.exec('COMMIT');
        this.eager = false;
        const after = this.committed ?? [];
        this.committed = null;
        for (const fn of after) fn();
        return v;
      } catch (err) {
        this.committed = null;
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
        this.committed = null;
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
