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

  private call(msg: object): {
    rows?: unknown[];
    rowCount?: number | null;
    bin?: (string | number)[];
    error?: Record<string, string>;
  } {
    if (this.closed) throw new PgError('The database connection is closed');
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

  query(text: string, values: unknown[] = [], opts: { array?: boolean; name?: string } = {}): PgResult {
    const r = this.call({ text, values, array: opts.array, name: opts.name });
    if (r.error) {
      const e = new PgError(r.error.message);
      Object.assign(e, { code: r.error.code, detail: r.error.detail, constraint: r.error.constraint });
      throw e;
    }
    const rows = r.rows ?? [];
    if (r.bin) for (const row of rows as Record<string | number, unknown>[]) for (const k of r.bin) toBuffer(row, k);
    return { rows, rowCount: r.rowCount ?? null };
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
