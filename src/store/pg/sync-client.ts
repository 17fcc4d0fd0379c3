// A synchronous PostgreSQL client, so the store's API stays synchronous on both engines (better-sqlite3 is
// synchronous too). Two transports, one behaviour:
// - libpq (the `libpq` package, an optional native dependency built against Debian's libpq-dev): blocking calls
//   on this thread, one network round trip per statement;
// - otherwise `pg` on a worker thread (./worker.mjs): this thread posts a batch of statements and sleeps on a
//   shared flag until the answer is there (Atomics.wait + receiveMessageOnPort): slower (a thread hop per batch).
// Writes inside a transaction can be deferred (defer) and sent with the next statement that needs an answer.
// docs/architecture.md says what waiting costs and when the store should become asynchronous.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { answerOf, coalesce, type Query } from './coalesce.js';

export interface PgResult {
  rows: unknown[];
  rowCount: number | null;
}

interface RawResult {
  rows: unknown[];
  rowCount: number | null;
  bin?: (string | number)[];
}
interface Reply {
  results: RawResult[];
  error?: Record<string, string | undefined>;
}
/** Filled in when a deferred statement has run. */
export interface Deferred extends Partial<PgResult> {
  done?: boolean;
}

export class PgError extends Error {
  code?: string;
  detail?: string;
  constraint?: string;
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

const TIMEOUT_MS = 60_000;
const NO_PARENTS: ReadonlySet<string> = new Set();

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

  /** Runs the batch in order, stopping at the first error. */
  protected abstract exchange(batch: Query[]): Reply;
  protected abstract end(): void;

  /**
   * Queues a statement whose answer nobody waits for yet (a write inside a transaction): it travels with the next
   * statement that needs an answer, or with flush(). `into` receives its result then.
   */
  defer(text: string, values: unknown[], opts: { array?: boolean; name?: string } = {}, into?: Deferred): void {
    this.pending.push({ q: { text, values, array: opts.array, name: opts.name }, into });
  }

  /** Sends the queued statements (one round trip); throws the first one's error (the rest did not run). */
  flush(): void {
    if (this.pending.length) this.send([]);
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
    const queued = this.pending;
    this.pending = [];
    const plan = coalesce(
      queued.map((p) => p.q),
      (table) => this.parents?.get(table) ?? (this.parents ? NO_PARENTS : undefined),
    );
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
    } finally {
      const ns = process.hrtime.bigint() - t0;
      this.waitedNs += ns;
      trace(batch, ns);
    }
    const results = r.results.map(toResult);
    queued.forEach((p, i) => {
      const at = plan.place[i];
      if (p.into && results[at.at]) Object.assign(p.into, answerOf(results[at.at], at), { done: true });
    });
    // A server error (SQLSTATE) in a mixed batch; a lost connection (no code, or class 08) is thrown as it is.
    if (r.error && mixed && r.error.code && !r.error.code.startsWith('08')) {
      this.poisoned = r.error.message ?? 'error';
      throw replayError(this.poisoned);
    }
    if (r.error) {
      const e = new PgError(r.error.message);
      Object.assign(e, { code: r.error.code, detail: r.error.detail, constraint: r.error.constraint });
      throw e;
    }
    return extra.length ? results[plan.batch.length + extra.length - 1] : undefined;
  }

  close(): void {
    if (this.closed) return;
    try {
      this.end();
    } finally {
      this.closed = true;
    }
  }
}

const WORKER = new URL('./worker.mjs', import.meta.url);

/** `pg` on a worker thread; this thread sleeps until each batch's answer is there. */
class WorkerClient extends SyncClient {
  readonly transport = 'worker' as const;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private readonly port: MessagePort;
  private readonly worker: Worker;

  constructor(url: string) {
    super();
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(WORKER, {
      workerData: { url, port: port2, flag: this.flag.buffer },
      transferList: [port2],
      // The worker needs no TypeScript loader: keep the parent's --import flags away from it.
      execArgv: [],
    });
    this.worker.unref();
  }

  protected exchange(batch: Query[]): Reply {
    return this.roundTrip({ batch });
  }

  private roundTrip(msg: object): Reply {
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage(msg);
    const deadline = Date.now() + TIMEOUT_MS;
    for (;;) {
      const woke = Atomics.wait(this.flag, 0, 0, Math.max(1, deadline - Date.now()));
      const got = receiveMessageOnPort(this.port);
      if (got) return got.message;
      if (woke === 'timed-out' && Date.now() >= deadline) throw new PgError('PostgreSQL did not answer within 60 s');
    }
  }

  protected end(): void {
    try {
      this.roundTrip({ end: true });
    } finally {
      this.port.close();
      void this.worker.terminate();
    }
  }
}

/** The libpq binding's synchronous calls we use. */
interface Libpq {
  connectSync(conn: string): void;
  errorMessage(): string;
  exec(text: string): void;
  prepare(name: string, text: string, nParams: number): void;
  execPrepared(name: string, values: (string | null)[]): void;
  execParams(text: string, values: (string | null)[]): void;
  resultStatus(): string;
  resultErrorMessage(): string;
  resultErrorFields(): Record<string, string | undefined> | undefined;
  cmdTuples(): string;
  ntuples(): number;
  nfields(): number;
  fname(i: number): string;
  ftype(i: number): number;
  getvalue(r: number, c: number): string;
  getisnull(r: number, c: number): boolean;
  finish(): void;
  enterPipelineMode?(): boolean;
  exitPipelineMode?(): boolean;
  pipelineSync?(): boolean;
  sendPrepare?(name: string, text: string, nParams: number): boolean;
  sendQueryPrepared?(name: string, values: (string | null)[]): boolean;
  sendQueryParams?(text: string, values: (string | null)[]): boolean;
  getResult?(): boolean;
}

/** A statement that can travel in a pipeline (the extended protocol: one statement per text). */
const pipelinable = (q: Query) => q.values.length > 0 || q.name !== undefined || !/;\s*\S/.test(q.text);

const asNumber = (v: string) => Number(v);
/** Integers (int8) and numerics as JS numbers (timestamps are ms, counts fit easily); the rest as `pg` reads them. */
const parserOf = (oid: number): ((v: string) => unknown) =>
  oid === 20 || oid === 1700 ? asNumber : (pg.types.getTypeParser(oid, 'text') as (v: string) => unknown);

/** A parameter as libpq's text format wants it. */
function textParam(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (Buffer.isBuffer(v)) return `\\x${v.toString('hex')}`;
  return String(v);
}

const FAILED = new Set(['PGRES_FATAL_ERROR', 'PGRES_BAD_RESPONSE', 'PGRES_NONFATAL_ERROR']);

/** libpq's blocking calls on this thread (no thread hop). */
class LibpqClient extends SyncClient {
  readonly transport = 'libpq' as const;
  private readonly prepared = new Set<string>();

  constructor(
    private readonly pq: Libpq,
    url: string,
  ) {
    super();
    try {
      pq.connectSync(url);
    } catch (err) {
      throw new PgError(`cannot connect to PostgreSQL: ${pq.errorMessage() || (err as Error).message}`.trim());
    }
    // libpq prints notices and warnings to stderr ("… already exists, skipping"): errors only.
    pq.exec('SET client_min_messages TO error');
  }

  /**
   * Several statements go out together in libpq's pipeline mode (one network round trip for the batch); a
   * statement of several commands (migrations, exec) runs on its own.
   */
  protected exchange(batch: Query[]): Reply {
    const results: RawResult[] = [];
    for (let i = 0; i < batch.length;) {
      let j = i;
      while (j < batch.length && this.pipelines && pipelinable(batch[j])) j++;
      if (j - i >= 2) {
        const error = this.pipeline(batch.slice(i, j), results);
        if (error) return { results, error };
        i = j;
        continue;
      }
      const error = this.run(batch[i]);
      if (error) return { results, error };
      results.push(this.read(batch[i].array === true));
      i++;
    }
    return { results };
  }

  private get pipelines(): boolean {
    return typeof this.pq.enterPipelineMode === 'function';
  }

  /** Sends the statements in one go, then reads each one's result (after an error the rest are skipped). */
  private pipeline(qs: Query[], results: RawResult[]): Reply['error'] | undefined {
    const pq = this.pq as Required<Libpq>;
    const steps: { prepare?: string; q?: Query }[] = [];
    pq.enterPipelineMode();
    try {
      const preparing = new Set<string>();
      for (const q of qs) {
        const params = q.values.map(textParam);
        if (q.name) {
          if (!this.prepared.has(q.name) && !preparing.has(q.name)) {
            pq.sendPrepare(q.name, q.text, q.values.length);
            preparing.add(q.name);
            steps.push({ prepare: q.name });
          }
          pq.sendQueryPrepared(q.name, params);
        } else pq.sendQueryParams(q.text, params);
        steps.push({ q });
      }
      pq.pipelineSync();
      let error: Reply['error'] | undefined;
      for (const step of steps) {
        pq.getResult(); // this statement's result (PGRES_PIPELINE_ABORTED after an error)
        if (!error) {
          error = this.failure();
          if (!error && step.prepare) this.prepared.add(step.prepare);
          else if (!error) results.push(this.read(step.q!.array === true));
        }
        while (pq.getResult()) {
          /* up to the NULL that ends this statement's results */
        }
      }
      while (pq.getResult() && pq.resultStatus() !== 'PGRES_PIPELINE_SYNC') {
        /* up to the sync point */
      }
      return error;
    } finally {
      pq.exitPipelineMode();
    }
  }

  /** Runs one statement; its error, if any. */
  private run(q: Query): Reply['error'] | undefined {
    const pq = this.pq;
    if (q.name) {
      if (!this.prepared.has(q.name)) {
        pq.prepare(q.name, q.text, q.values.length);
        const e = this.failure();
        if (e) return e;
        this.prepared.add(q.name);
      }
      pq.execPrepared(q.name, q.values.map(textParam));
    } else if (q.values.length) {
      pq.execParams(q.text, q.values.map(textParam));
    } else pq.exec(q.text);
    return this.failure();
  }

  private failure(): Reply['error'] | undefined {
    const status = this.pq.resultStatus();
    if (!FAILED.has(status) && status !== '') return undefined;
    const f = this.pq.resultErrorFields() ?? {};
    const message = (f.messagePrimary ?? this.pq.resultErrorMessage() ?? this.pq.errorMessage()).trim();
    return { message: message || 'PostgreSQL connection lost', code: f.sqlState, detail: f.messageDetail };
  }

  private read(array: boolean): RawResult {
    const pq = this.pq;
    const nf = pq.nfields();
    const names: string[] = [];
    const parse: ((v: string) => unknown)[] = [];
    for (let j = 0; j < nf; j++) {
      names.push(pq.fname(j));
      parse.push(parserOf(pq.ftype(j)));
    }
    const n = pq.ntuples();
    const rows: unknown[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const row: Record<string | number, unknown> | unknown[] = array ? new Array(nf) : {};
      for (let j = 0; j < nf; j++) {
        const v = pq.getisnull(i, j) ? null : parse[j](pq.getvalue(i, j));
        (row as Record<string | number, unknown>)[array ? j : names[j]] = v;
      }
      rows[i] = row;
    }
    const tuples = parseInt(pq.cmdTuples(), 10);
    return { rows, rowCount: Number.isNaN(tuples) ? n : tuples };
  }

  protected end(): void {
    this.pq.finish();
  }
}

/**
 * A client for `url`: libpq when its binding is installed (MTA_PG_CLIENT=worker forces the worker thread),
 * else `pg` on a worker thread.
 */
export function openSyncClient(url: string): SyncClient {
  if (process.env.MTA_PG_CLIENT !== 'worker') {
    let Ctor: (new () => Libpq) | undefined;
    try {
      Ctor = createRequire(import.meta.url)('libpq') as new () => Libpq;
    } catch {
      /* not built on this machine: the worker below */
    }
    if (Ctor) return new LibpqClient(new Ctor(), url);
  }
  return new WorkerClient(url);
}
