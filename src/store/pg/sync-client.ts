// A synchronous PostgreSQL client, so the store's API stays synchronous on both engines (better-sqlite3 is
// synchronous too). Two transports, one behaviour:
// - libpq (the `libpq` package, an optional native dependency built against Debian's libpq-dev): blocking calls
//   on this thread, one network round trip per statement;
// - otherwise `pg` on a worker thread (./worker.mjs): this thread posts a batch of statements and sleeps on a
//   shared flag until the answer is there (Atomics.wait + receiveMessageOnPort): slower (a thread hop per batch).
// Writes inside a transaction can be deferred (defer) and sent with the next statement that needs an answer.
// With libpq, a transaction's last batch (its writes and COMMIT) can be sent without waiting (sendLater), behind any
// still in flight: their answers are read in order on the socket's readable events, or first thing when the next
// statement that needs an answer goes out.
// docs/architecture.md says what waiting costs and when the store should become asynchronous.
import fs from 'node:fs';
import { answerOf, coalesce, type Plan, type Query } from './coalesce.js';
import { isConnectionLoss, lostError, PgError, RECONNECT_FIRST_MS, RECONNECT_MAX_MS, unreachable } from './errors.js';

export { isConnectionLoss, PgError, UNREACHABLE } from './errors.js';

export type { Query };

export interface PgResult {
  rows: unknown[];
  rowCount: number | null;
}

export interface RawResult {
  rows: unknown[];
  rowCount: number | null;
  bin?: (string | number)[];
}
export interface Reply {
  results: RawResult[];
  error?: Record<string, string | undefined>;
}
/** Filled in when a deferred statement has run. */
export interface Deferred extends Partial<PgResult> {
  done?: boolean;
}

/**
 * The code of the error thrown when a batch that carried the writes of an already ended scope (a group-commit
 * request whose RELEASE was deferred: PgDatabase.lazyNext) failed: the error may belong to that scope, not to the
 * one that sent the batch, and the transaction is aborted. Retryable: groupTx rolls the turn back and runs its
 * requests again, each scope flushed at its end.
 */
export const REPLAY = 'MTA_REPLAY';
const replayError = (cause: string) => {
  const e = new PgError(`a deferred write of an earlier request of this transaction failed (${cause}): run it again`);
  e.code = REPLAY;
  return e;
};

export const TIMEOUT_MS = 60_000;
const NO_PARENTS: ReadonlySet<string> = new Set();
/** SQLSTATE of a statement refused because an earlier one of its transaction failed. */
const IN_FAILED_TRANSACTION = '25P02';

/**
 * MTA_PG_TRACE=<file>: every round trip is appended to the file, one line per statement (its text, no values),
 * then `# <µs waited>`, a blank line between round trips. For counting what a request costs
 * (docs/postgres-notes.md, scripts/pg-trips.ts); never in production.
 */
const TRACE = process.env.MTA_PG_TRACE;
function trace(batch: Query[], ns: bigint): void {
  if (!TRACE) return;
  const line = (q: Query) => `${q.name ?? '-'}\t${q.text.replace(/\s+/g, ' ').slice(0, 300)}`;
  fs.appendFileSync(TRACE, `${batch.map(line).join('\n')}\n# ${ns / 1000n}\n\n`);
}

function toBuffer(row: Record<string | number, unknown>, k: string | number): void {
  const v = row[k];
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

function toError(f: NonNullable<Reply['error']>): PgError {
  const e = new PgError(f.message ?? 'PostgreSQL error');
  Object.assign(e, { code: f.code, detail: f.detail, constraint: f.constraint });
  return e;
}

/** A server error (SQLSTATE) in a mixed batch comes as REPLAY; a lost connection (no code, or class 08) as it is. */
const replays = (e: NonNullable<Reply['error']>, mixed: boolean): boolean => mixed && !!e.code && !isConnectionLoss(e);

/** The error a batch sent by sendLater is told of: REPLAY where replays() says so, or `e` itself; null for none. */
function laterError(e: Reply['error'], mixed: boolean): PgError | null {
  if (!e) return null;
  return replays(e, mixed) ? replayError(e.message ?? 'error') : toError(e);
}

/** A batch sent by sendLater whose answer has not been read yet. */
interface Later {
  queued: { q: Query; into?: Deferred }[];
  plan: Plan;
  batch: Query[];
  mixed: boolean;
  done: (err: PgError | null) => void;
  waiters: (() => void)[];
  t0: bigint;
}

function toResult(r: RawResult): PgResult {
  if (r.bin) for (const row of r.rows as Record<string | number, unknown>[]) for (const k of r.bin) toBuffer(row, k);
  return { rows: r.rows, rowCount: r.rowCount };
}

export abstract class SyncClient {
  /** Statements run, round trips (batches), and the time this thread spent waiting (metrics, benchmarks). */
  queries = 0;
  roundTrips = 0;
  waitedNs = 0n;
  abstract readonly transport: 'libpq' | 'worker';
  protected closed = false;
  private pending: { q: Query; into?: Deferred }[] = [];
  /**
   * Each table's foreign-key parents (PgDatabase.loadCatalog): a deferred INSERT merged with an earlier one of the
   * same statement moves past writes of other tables, never past its parents' (./coalesce.ts). Null: merged only
   * with the one just before it.
   */
  parents: Map<string, Set<string>> | null = null;
  /** The queued statements include an ended scope's writes (see REPLAY): an error then poisons the transaction. */
  unconfirmed = false;
  /** Until ROLLBACK, every statement fails with REPLAY (the transaction is aborted; see above). */
  private poisoned: string | null = null;

  /** The batches sent by sendLater whose answers have not been read yet, oldest first (answers come in order). */
  private laters: Later[] = [];

  /**
   * The connection was lost: why, since when, and when the next statement may try a new one (until then every
   * statement fails at once with UNREACHABLE). Null while connected.
   */
  private down: { reason: string; since: number; retryAt: number; delayMs: number } | null = null;
  /** A transaction was open at the loss: statements fail until its ROLLBACK (the server rolled it back). */
  private lostTx = false;
  /** Whether a transaction is open (set by PgDatabase): a loss then leaves lostTx set until the ROLLBACK. */
  txOpen: () => boolean = () => false;

  /** Why the database cannot be reached, or null while connected (or not tried again yet since it came back). */
  get unreachable(): string | null {
    return this.down?.reason ?? null;
  }

  /** Closes the lost connection and opens a new one (throws when it cannot); named statements are prepared anew. */
  protected abstract reconnect(): void;

  /**
   * The connection is gone: what was queued or in flight is dropped (the batches sent by sendLater are told of
   * `err`), and the next statement tries a new connection after a back-off delay.
   */
  private lose(err: PgError, reason = err.message): PgError {
    const laters = this.laters;
    this.laters = [];
    this.pending = [];
    this.unconfirmed = false;
    this.poisoned = null;
    if (this.txOpen()) this.lostTx = true;
    const delayMs = this.down ? Math.min(this.down.delayMs * 2, RECONNECT_MAX_MS) : RECONNECT_FIRST_MS;
    const now = Date.now();
    this.down = { reason, since: this.down?.since ?? now, retryAt: now + delayMs, delayMs };
    this.dropped();
    if (laters.length)
      queueMicrotask(() => {
        for (const l of laters) {
          l.done(err);
          for (const fn of l.waiters) fn();
        }
      });
    return err;
  }

  /** The transport forgets the lost connection's state (batches in flight, statements prepared). */
  protected dropped(): void {}

  /** While down: fails fast until the back-off delay has passed, then tries a new connection. */
  private reach(): void {
    if (!this.down) return;
    if (Date.now() < this.down.retryAt) throw unreachable(this.down.reason);
    try {
      this.reconnect();
      this.down = null;
    } catch (e) {
      const reason = (e as Error).message;
      throw this.lose(unreachable(reason), reason);
    }
  }

  /** Runs the batch in order, stopping at the first error. */
  protected abstract exchange(batch: Query[]): Reply;
  protected abstract end(): void;
  /** Whether this transport can send a batch without waiting for its answer (begin/poll). */
  protected canBegin(_batch: Query[]): boolean {
    return false;
  }
  /** Sends the batch without waiting for its answer (only after canBegin said yes). */
  protected begin(_batch: Query[]): void {
    throw new PgError('this transport cannot send without waiting');
  }
  /** Reads what has arrived of the begun batch's answer (`block`: waits for all of it); the reply once complete. */
  protected poll(_block: boolean): Reply | undefined {
    throw new PgError('no batch in flight');
  }

  /**
   * Sends the queued statements and then `text` (a COMMIT) without waiting for the answer, so this thread goes on
   * while the server runs and flushes them. `done` runs in a microtask once the answer is read: on the socket's next
   * readable event, or when the next statement is sent (answers come back in order, so that reads this one first).
   * On an error nothing of the batch was kept: the transaction is rolled back before anything else is sent, and the
   * error of a batch carrying an ended scope's writes comes as REPLAY. False, with nothing sent, when this
   * transport or batch cannot go out that way (then use query()).
   */
  sendLater(text: string, done: (err: PgError | null) => void): boolean {
    if (this.closed || this.poisoned !== null || this.down || this.lostTx) return false;
    const queued = this.pending;
    const plan = this.plan(queued);
    const batch = [...plan.batch, { text, values: [] }];
    if (!this.canBegin(batch)) return false;
    // Behind batches still in flight (their answers are read first): the server runs one after the other.
    this.begin(batch);
    this.laters.push({ queued, plan, batch, mixed: this.unconfirmed, done, waiters: [], t0: process.hrtime.bigint() });
    this.pending = [];
    this.unconfirmed = false;
    this.queries += batch.length;
    this.roundTrips++;
    return true;
  }

  /** Whether a batch sent by sendLater has not been answered yet. */
  get inFlight(): boolean {
    return this.laters.length > 0;
  }

  /** How many batches sent by sendLater have not been answered yet. */
  get inFlightCount(): number {
    return this.laters.length;
  }

  /**
   * Runs fn in a microtask once every batch sent by sendLater so far is answered (after their `done`); false if
   * none is in flight.
   */
  whenSettled(fn: () => void): boolean {
    const last = this.laters[this.laters.length - 1];
    if (!last) return false;
    last.waiters.push(fn);
    return true;
  }

  /** Runs fn in a microtask once the oldest batch in flight is answered; false if none is in flight. */
  whenOneSettled(fn: () => void): boolean {
    if (!this.laters.length) return false;
    this.laters[0].waiters.push(fn);
    return true;
  }

  /** Reads the in-flight batches' answers, waiting for what has not arrived yet. */
  settle(): void {
    while (this.laters.length) {
      const t0 = process.hrtime.bigint();
      let reply: Reply;
      try {
        reply = this.poll(true)!;
      } catch (e) {
        throw this.lose(lostError(e));
      } finally {
        this.waitedNs += process.hrtime.bigint() - t0;
      }
      this.finish(reply);
    }
  }

  /** The socket is readable: reads what arrived, without waiting. */
  protected readable(): void {
    while (this.laters.length) {
      let reply: Reply | undefined;
      try {
        reply = this.poll(false);
      } catch {
        return; // read again, waiting, when the next statement goes out
      }
      if (!reply) return;
      this.finish(reply);
    }
  }

  /**
   * The oldest batch's answer is in. After an error the server skipped the rest of that batch, COMMIT included, and
   * its transaction stays open (aborted): the batches sent behind it ran in it and failed too (or, if it was the
   * COMMIT that failed, ran on their own). Their answers are read before the ROLLBACK; one that failed only
   * because of the aborted transaction comes as REPLAY.
   */
  private finish(r: Reply): void {
    const l = this.laters.shift()!;
    trace(l.batch, process.hrtime.bigint() - l.t0);
    this.place(l.queued, l.plan, r.results.map(toResult));
    const answered: { l: Later; err: PgError | null }[] = [{ l, err: laterError(r.error, l.mixed) }];
    if (r.error) {
      while (this.laters.length) {
        const next = this.laters.shift()!;
        let reply: Reply;
        try {
          reply = this.poll(true)!;
        } catch (e) {
          reply = { results: [], error: { message: (e as Error).message } };
        }
        this.place(next.queued, next.plan, reply.results.map(toResult));
        answered.push({
          l: next,
          err: laterError(reply.error, next.mixed || reply.error?.code === IN_FAILED_TRANSACTION),
        });
      }
      try {
        this.exchange([{ text: 'ROLLBACK', values: [] }]);
      } catch {
        /* the connection is gone: so is the transaction */
      }
    }
    queueMicrotask(() => {
      for (const a of answered) {
        a.l.done(a.err);
        for (const fn of a.l.waiters) fn();
      }
    });
  }

  private plan(queued: { q: Query }[]): Plan {
    return coalesce(
      queued.map((p) => p.q),
      (table) => this.parents?.get(table) ?? (this.parents ? NO_PARENTS : undefined),
    );
  }

  /** Hands each deferred statement its answer (its own row of a merged INSERT). */
  private place(queued: { q: Query; into?: Deferred }[], plan: Plan, results: PgResult[]): void {
    queued.forEach((p, i) => {
      const at = plan.place[i];
      if (p.into && results[at.at]) Object.assign(p.into, answerOf(results[at.at], at), { done: true });
    });
  }

  /**
   * Queues a statement whose answer nobody waits for yet (a write inside a transaction): it travels with the next
   * statement that needs an answer, or with flush(). `into` receives its result then.
   */
  defer(
    text: string,
    values: unknown[],
    opts: { array?: boolean; name?: string; blind?: boolean } = {},
    into?: Deferred,
  ): void {
    this.pending.push({ q: { text, values, array: opts.array, name: opts.name, blind: opts.blind }, into });
  }

  /** Sends the queued statements (one round trip); throws the first one's error (the rest did not run). */
  flush(): void {
    this.settle();
    if (this.pending.length) this.send([]);
  }

  /**
   * Fills `into`: from the answer in flight if it travelled there (no further round trip), else by sending the
   * queued statements it is among.
   */
  answer(into: Deferred): void {
    if (!into.done) this.settle();
    if (!into.done) this.flush();
  }

  /** Forgets the queued statements (the transaction they belong to is being rolled back). */
  discard(): void {
    this.pending = [];
    this.unconfirmed = false;
  }

  query(text: string, values: unknown[] = [], opts: { array?: boolean; name?: string } = {}): PgResult {
    return this.send([{ text, values, array: opts.array, name: opts.name }])!;
  }

  private send(extra: Query[]): PgResult | undefined {
    if (this.closed) throw new PgError('The database connection is closed');
    if (this.lostTx && !this.txOpen()) this.lostTx = false; // that transaction is over for its caller too
    if (this.lostTx) {
      // Until its end, the transaction's statements fail; its ROLLBACK succeeds, its COMMIT fails: the server rolled
      // it back with the connection.
      const end = extra.length === 1 ? /^\s*(ROLLBACK|COMMIT|END)\s*$/i.exec(extra[0].text)?.[1].toUpperCase() : null;
      if (end) {
        this.pending = [];
        this.lostTx = false;
      }
      if (end !== 'ROLLBACK') throw unreachable('the connection was lost during the transaction');
      return { rows: [], rowCount: null };
    }
    this.reach();
    this.settle();
    const queued = this.pending;
    this.pending = [];
    const plan = this.plan(queued);
    const batch = [...plan.batch, ...extra];
    const mixed = this.unconfirmed;
    this.unconfirmed = false;
    if (this.poisoned !== null) {
      if (batch.length !== 1 || !/^\s*ROLLBACK\s*$/i.test(batch[0].text)) throw replayError(this.poisoned);
      this.poisoned = null;
    }
    this.queries += batch.length;
    this.roundTrips++;
    const t0 = process.hrtime.bigint();
    let r: Reply;
    try {
      r = this.exchange(batch);
    } catch (e) {
      if (isConnectionLoss(e)) throw this.lose(lostError(e));
      throw e;
    } finally {
      const ns = process.hrtime.bigint() - t0;
      this.waitedNs += ns;
      trace(batch, ns);
    }
    if (r.error && isConnectionLoss(r.error)) throw this.lose(toError(r.error));
    const results = r.results.map(toResult);
    this.place(queued, plan, results);
    if (r.error && replays(r.error, mixed)) {
      this.poisoned = r.error.message ?? 'error';
      throw replayError(this.poisoned);
    }
    if (r.error) throw toError(r.error);
    return extra.length ? results[plan.batch.length + extra.length - 1] : undefined;
  }

  close(): void {
    if (this.closed) return;
    try {
      this.settle();
    } catch {
      /* closing anyway */
    }
    try {
      this.end();
    } finally {
      this.closed = true;
    }
  }
}
