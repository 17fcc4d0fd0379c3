// A synchronous PostgreSQL client: one `pg` connection on a worker thread (./worker.mjs); the calling
// thread posts a query and sleeps on a shared flag until the answer is there (Atomics.wait +
// receiveMessageOnPort). This keeps the store's API synchronous on both engines (better-sqlite3 is
// synchronous too), at the price of one loopback round trip per statement during which this thread waits:
// see docs/postgres.md for what that costs and when the store should become asynchronous.
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';

export interface PgResult {
  rows: unknown[];
  rowCount: number | null;
}

interface Query {
  text: string;
  values: unknown[];
  array?: boolean;
  name?: string;
}
interface RawResult {
  rows: unknown[];
  rowCount: number | null;
  bin?: (string | number)[];
}
interface Reply {
  results: RawResult[];
  error?: Record<string, string>;
}
/** Filled in when a deferred statement has run. */
export interface Deferred extends Partial<PgResult> {
  done?: boolean;
}

function toResult(r: RawResult): PgResult {
  if (r.bin) for (const row of r.rows as Record<string | number, unknown>[]) for (const k of r.bin) toBuffer(row, k);
  return { rows: r.rows, rowCount: r.rowCount };
}

export class PgError extends Error {
  code?: string;
  detail?: string;
  constraint?: string;
}

function toBuffer(row: Record<string | number, unknown>, k: string | number): void {
  const v = row[k];
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) row[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

const WORKER = new URL('./worker.mjs', import.meta.url);
const TIMEOUT_MS = 60_000;

export class SyncPgClient {
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private readonly port: MessagePort;
  private readonly worker: Worker;
  private closed = false;
  /** Statements run, round trips to the worker, and the time this thread spent waiting (metrics, benchmarks). */
  queries = 0;
  roundTrips = 0;
  waitedNs = 0n;
  private pending: { q: Query; into?: Deferred }[] = [];

  constructor(url: string) {
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

  private call(msg: object): Reply {
    if (this.closed) throw new PgError('The database connection is closed');
    this.roundTrips++;
    const t0 = process.hrtime.bigint();
    try {
      return this.roundTrip(msg);
    } finally {
      this.waitedNs += process.hrtime.bigint() - t0;
    }
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
  }

  query(text: string, values: unknown[] = [], opts: { array?: boolean; name?: string } = {}): PgResult {
    return this.send([{ text, values, array: opts.array, name: opts.name }])!;
  }

  private send(extra: Query[]): PgResult | undefined {
    const queued = this.pending;
    this.pending = [];
    const batch = [...queued.map((p) => p.q), ...extra];
    this.queries += batch.length;
    const r = this.call({ batch });
    const results = r.results.map(toResult);
    queued.forEach((p, i) => {
      if (p.into && results[i]) Object.assign(p.into, results[i], { done: true });
    });
    if (r.error) {
      const e = new PgError(r.error.message);
      Object.assign(e, { code: r.error.code, detail: r.error.detail, constraint: r.error.constraint });
      throw e;
    }
    return extra.length ? results[results.length - 1] : undefined;
  }

  close(): void {
    if (this.closed) return;
    try {
      this.call({ end: true });
    } finally {
      this.closed = true;
      this.port.close();
      void this.worker.terminate();
    }
  }
}
