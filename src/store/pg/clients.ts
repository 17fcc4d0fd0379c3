// The two transports behind SyncClient (./sync-client.ts): libpq's calls on this thread (pipeline mode; a turn's
// COMMIT may be sent without waiting and read on the socket's next readable event), or `pg` on a worker thread.
import { createRequire } from 'node:module';
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { PgError, SyncClient, TIMEOUT_MS, type Query, type RawResult, type Reply } from './sync-client.js';

const WORKER = new URL('./worker.mjs', import.meta.url);

/** `pg` on a worker thread; this thread sleeps until each batch's answer is there. */
class WorkerClient extends SyncClient {
  readonly transport = 'worker' as const;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private port!: MessagePort;
  private worker!: Worker;

  constructor(private readonly url: string) {
    super();
    this.spawn();
  }

  /** A worker with its own `pg` client (it connects at once; its first answer tells whether it could). */
  private spawn(): void {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.worker = new Worker(WORKER, {
      workerData: { url: this.url, port: port2, flag: this.flag.buffer },
      transferList: [port2],
      // The worker needs no TypeScript loader: keep the parent's --import flags away from it.
      execArgv: [],
    });
    this.worker.unref();
  }

  /** A new worker, so a new connection and no statement prepared: the lost one's worker is ended. */
  protected reconnect(): void {
    this.port.close();
    void this.worker.terminate();
    this.spawn();
    const r = this.roundTrip({ batch: [] });
    if (r.error) throw Object.assign(new PgError(r.error.message ?? 'cannot connect to PostgreSQL'), r.error);
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
  startReader?(): void;
  stopReader?(): void;
  consumeInput?(): boolean;
  isBusy?(): boolean;
  on?(event: 'readable', fn: () => void): void;
}

/** One statement of a pipeline: its PREPARE, or the statement itself. */
interface Step {
  prepare?: string;
  q?: Query;
}
/** A pipeline being read: the step whose results come next, and what was read so far. */
interface PipelineRead {
  steps: Step[];
  i: number;
  /** this step's result was read; the NULL that ends it comes next */
  inQuery: boolean;
  results: RawResult[];
  error?: Reply['error'];
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
  private pq!: Libpq;

  constructor(
    private readonly open: () => Libpq,
    private readonly url: string,
  ) {
    super();
    this.connect();
  }

  private connect(): void {
    const pq = this.open();
    try {
      pq.connectSync(this.url);
    } catch (err) {
      // After a failed connectSync the binding may have no connection to ask (errorMessage: "connection pointer is NULL").
      const why = [pq.errorMessage(), (err as Error).message].find((m) => m && !/pointer is NULL/.test(m)) ?? '';
      pq.finish();
      throw new PgError(`cannot connect to PostgreSQL: ${why}`.trim());
    }
    // libpq prints notices and warnings to stderr ("… already exists, skipping"): errors only.
    pq.exec('SET client_min_messages TO error');
    pq.on?.('readable', () => this.readable());
    this.pq = pq;
    this.live = true;
  }

  /** Whether this.pq is connected (not finished: finishing twice would free it twice). */
  private live = false;

  /** The lost connection's pipelines and prepared statements are forgotten with it. */
  protected dropped(): void {
    try {
      if (this.inFlightReads.length) this.pq.stopReader?.();
      if (this.live) this.pq.finish();
    } catch {
      /* gone already */
    }
    this.live = false;
    this.inFlightReads = [];
    this.prepared.clear();
    this.preparing.clear();
  }

  protected reconnect(): void {
    this.connect();
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
    const st = this.sendPipeline(qs);
    this.readPipeline(st, true);
    results.push(...st.results);
    return st.error;
  }

  /** Statements whose PREPARE was sent in a pipeline not read yet (a later pipeline does not prepare them again). */
  private readonly preparing = new Set<string>();

  /** Pipeline mode, every statement (and the PREPAREs it needs) and a sync point sent; stays in pipeline mode. */
  private sendPipeline(qs: Query[]): PipelineRead {
    const pq = this.pq as Required<Libpq>;
    const steps: Step[] = [];
    pq.enterPipelineMode();
    const preparing = this.preparing;
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
    return { steps, i: 0, inQuery: false, results: [] };
  }

  /**
   * Reads the pipeline's results in order, each statement's result then the NULL that ends it, then the sync point,
   * and leaves pipeline mode. Without `block` it stops where libpq would wait for more input (false: not done).
   */
  private readPipeline(st: PipelineRead, block: boolean): boolean {
    const pq = this.pq as Required<Libpq>;
    const wait = () => !block && pq.isBusy();
    while (st.i < st.steps.length) {
      if (wait()) return false;
      const got = pq.getResult(); // PGRES_PIPELINE_ABORTED after an error; a NULL ends the statement's results
      if (st.inQuery && !got) {
        st.inQuery = false;
        st.i++;
        continue;
      }
      if (st.inQuery) continue; // a further result of the same statement
      st.inQuery = true;
      const step = st.steps[st.i];
      if (step.prepare) this.preparing.delete(step.prepare);
      if (st.error) continue;
      st.error = this.failure();
      if (!st.error && step.prepare) this.prepared.add(step.prepare);
      else if (!st.error) st.results.push(this.read(step.q!.array === true));
    }
    for (;;) {
      if (wait()) return false;
      if (!pq.getResult() || pq.resultStatus() === 'PGRES_PIPELINE_SYNC') break;
    }
    // Pipelines sent behind this one (sendLater) are still to be read: pipeline mode lasts until the last.
    if (this.inFlightReads.length <= 1) pq.exitPipelineMode();
    return true;
  }

  /** Pipelines sent without waiting (begin), oldest first. */
  private inFlightReads: PipelineRead[] = [];

  protected canBegin(batch: Query[]): boolean {
    return this.pipelines && typeof this.pq.startReader === 'function' && batch.every(pipelinable);
  }

  protected begin(batch: Query[]): void {
    this.inFlightReads.push(this.sendPipeline(batch));
    if (this.inFlightReads.length === 1) this.pq.startReader!();
  }

  protected poll(block: boolean): Reply | undefined {
    const st = this.inFlightReads[0];
    if (!block && !this.pq.consumeInput!()) block = true; // the connection failed: read the error now
    if (!this.readPipeline(st, block)) return undefined;
    this.inFlightReads.shift();
    if (!this.inFlightReads.length) this.pq.stopReader!();
    return { results: st.results, error: st.error };
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
    if (this.live) this.pq.finish();
    this.live = false;
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
    if (Ctor) return new LibpqClient(() => new Ctor(), url);
  }
  return new WorkerClient(url);
}
