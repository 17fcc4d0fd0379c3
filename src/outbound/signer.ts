// The outbound worker thread (the second core): composing and signing, and the SMTP client sessions, so the delivery
// loop's thread keeps to the store and the scheduling. Until the worker is up, or if it dies, signing runs on this
// thread and send() answers null (the caller sends from this thread): a worker problem never stops mail.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { workerBuild } from './worker-build.mjs';
import { composeAndSign, type SignJob, type Signer } from './message.js';
import type { SendOptions, SendResult, SmtpOptions, Target } from './smtp.js';
import type { SendArgs, WorkerIn } from './sign-worker.js';
import { BatchPort } from './batch-port.js';

/** Fallback boot: registers tsx in the worker (a loader thread and a compiler of its own). */
const BOOT = new URL('./sign-worker.mjs', import.meta.url);
/** Worker exits after which signing and SMTP stay on the main thread. */
const MAX_FAILURES = 3;

/**
 * The precompiled service (dist/mta.mjs; scripts/build.mjs defines this as "1" there) starts the worker from the
 * worker bundle built with it, dist/sign-worker.cjs: no esbuild run at each start or after each rest. Run from
 * source, the worker is bundled when it starts (below).
 */
const prebuilt = (): URL | null =>
  process.env.MTA_PREBUILT_WORKER === '1' ? new URL('../../dist/sign-worker.cjs', import.meta.url) : null;

let code: Promise<string | null> | null = null;
/**
 * The worker's code (worker-build.mjs: sign-worker.ts and the little it imports), bundled once per process by
 * esbuild (tsx's own compiler) when the service runs from source; ~35 MiB less than a TypeScript loader in the
 * thread. null: esbuild unavailable.
 */
function bundle(): Promise<string | null> {
  code ??= import('esbuild')
    .then(async ({ build, stop }) => {
      const r = await build({ ...workerBuild, write: false, logLevel: 'silent' });
      await stop(); // esbuild's service process is not needed any more
      return r.outputFiles[0].text;
    })
    .catch(() => null);
  return code;
}

/**
 * The worker's young generation: 12 MiB, two semi-spaces of 4 MiB (V8's default grows them to 16 MiB each during a
 * burst: 32 MiB committed, ~24 MiB of the run's peak resident memory). What the worker allocates per message lives
 * for one composition or one SMTP transaction, so the smaller nursery promotes no more (BENCHMARKS.md "Session 20").
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 12 };

/** Profiling flags pass to the worker; loaders (`--import tsx`) do not: its code is plain JavaScript. */
const workerArgv = () => process.execArgv.filter((a) => /^--(cpu-prof|heap-prof)/.test(a));

/** A transaction that never reached an answer (the worker stopped or refused it): deferred, the session gone. */
const lost = (t: Target, rcpts: string[], error: string): SendResult => ({
  verdicts: rcpts.map(() => ({ kind: 'deferred', reply: null, command: 'INTERNAL', error })),
  info: { mx_host: t.mxHost, remote_ip: t.ip, tls_version: null, tls_cipher: null },
  tryNext: false,
  closed: true,
});

type FromWorker = {
  ready?: true;
  id?: number;
  raw?: ArrayBuffer;
  error?: string;
  sent?: SendResult;
  idleClosed?: string;
  closedAll?: true;
  open?: number;
  idlePools?: number;
};

export class SignerPool {
  private worker: Worker | null = null;
  private port: BatchPort<WorkerIn> | null = null;
  private ready = false;
  private next = 1;
  private pending = new Map<number, { resolve(b: Buffer): void; reject(e: Error): void; job: SignJob }>();
  private sends = new Map<number, { resolve(r: SendResult): void; t: Target; rcpts: string[]; pool?: string }>();
  /** sends not yet posted: the worker is starting or closing its sessions */
  private waitingSends: { id: number; send: SendArgs }[] = [];
  private smtpOptions: Omit<SmtpOptions, 'onIdleClosed'> | null = null;
  private onIdleClosed: (key: string) => void = () => {};
  /** Idle sessions the worker holds per pool key, as far as this thread can tell (reported gone if it dies). */
  private idle = new Map<string, number>();
  private closing: Promise<void> | null = null;
  private closed: (() => void) | null = null;
  private started = false;
  /** The worker's SMTP pool as it last said: open sessions, pool keys with idle sessions. */
  readonly smtpCounts = { open: 0, idlePools: 0 };
  private failures = 0;
  private stopped = false;
  private booting = false;

  constructor(private log: Logger) {}

  /** Signing jobs and SMTP transactions posted to the worker (or waiting to be) and not answered yet. */
  get inFlight(): { signing: number; sending: number } {
    return { signing: this.pending.size, sending: this.sends.size };
  }

  /** Whether jobs go to the worker thread now. */
  get onWorker(): boolean {
    return this.ready && this.worker !== null;
  }

  /** The Signer to give prepareEmail. */
  readonly sign: Signer = (job) => {
    if (!this.ready || !this.worker) {
      this.wakeUp();
      return composeAndSign(job);
    }
    const id = this.next++;
    return new Promise<Buffer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, job });
      this.post({ id, job });
    });
  };

  /**
   * SMTP sessions go to the worker, with these settings, once it is up; `onIdleClosed` hears of every idle session
   * of a pool that went (idle time-out, the server hung up, the worker gone).
   */
  useSmtp(o: Omit<SmtpOptions, 'onIdleClosed'>, onIdleClosed: (key: string) => void): void {
    this.smtpOptions = o;
    this.onIdleClosed = onIdleClosed;
    this.post({ smtp: o });
  }

  /**
   * One SMTP transaction on the worker (same contract as SmtpClient.send). While the worker starts (after a rest) or
   * its sessions are being closed, the send waits here for it: a lane whose sessions opened on the main thread would
   * stay there as long as one of them is open (transport.ts). Null when SMTP cannot go to a worker (no settings, or
   * the worker failed for good).
   */
  send(
    t: Target,
    from: string,
    rcpts: string[],
    raw: Buffer,
    deadline: number,
    source: string | undefined,
    opt: SendOptions,
  ): Promise<SendResult> | null {
    if (!this.smtpOptions || !this.started || this.stopped || this.failures >= MAX_FAILURES) return null;
    const id = this.next++;
    const pool = opt.pool;
    const copy = new Uint8Array(raw); // exactly the message's bytes (raw may sit in a larger pooled buffer)
    return new Promise<SendResult>((resolve) => {
      this.sends.set(id, { resolve, t, rcpts, pool });
      this.waitingSends.push({ id, send: { t, from, rcpts, raw: copy, deadline, source, opt } });
      if (this.ready && this.worker && !this.closing) this.postSends();
      else this.wakeUp();
    });
  }

  /** The sends waiting for the worker go to it (it is up, its SMTP settings given). */
  private postSends(): void {
    const list = this.waitingSends;
    this.waitingSends = [];
    for (const m of list) {
      if (!this.sends.has(m.id)) continue; // given back meanwhile (takeBack)
      const pool = m.send.opt.pool;
      const n = pool === undefined ? 0 : (this.idle.get(pool) ?? 0);
      if (n > 0) this.idle.set(pool!, n - 1); // the worker takes one of that pool's idle sessions
      this.post(m, m.send.raw.buffer as ArrayBuffer);
    }
  }

  /** Tells the worker's sessions to go (QUIT when idle); stop() waits for that, up to a second. */
  /** The worker's sends waiting for a session come back as not started. */
  dropWaiting(): void {
    if (this.worker) this.post({ dropWaiting: true });
  }

  closeSmtp(): void {
    if (!this.worker || this.closing) return;
    this.closing = new Promise<void>((r) => {
      this.closed = r;
      setTimeout(r, 1000).unref();
    });
    this.post({ closeAll: true });
  }

  private post(m: WorkerIn, transfer?: ArrayBuffer): void {
    this.port?.post(m, transfer);
  }

  /** Work came while the worker rests (trim): start it again. */
  private wakeUp(): void {
    if (!this.worker && !this.stopped && this.started) this.start();
  }

  start(): void {
    this.started = true;
    if (this.worker || this.booting || this.failures >= MAX_FAILURES) return;
    this.stopped = false;
    const file = prebuilt(); // read at each start: the tests run from source choose per file (test/helpers/prebuilt.ts)
    if (file) return this.spawn(file);
    this.booting = true;
    void bundle().then((js) => {
      code = null; // not kept (1.4 MB): a restart bundles again
      this.booting = false;
      if (!this.stopped && !this.worker) this.spawn(js);
    });
  }

  /** js: the worker's code (a bundle made now), or its prebuilt file; null: through tsx (BOOT). */
  private spawn(js: string | URL | null): void {
    const w =
      js === null
        ? new Worker(BOOT, { resourceLimits: WORKER_LIMITS })
        : js instanceof URL
          ? new Worker(js, { execArgv: workerArgv(), resourceLimits: WORKER_LIMITS })
          : new Worker(js, { eval: true, execArgv: workerArgv(), resourceLimits: WORKER_LIMITS });
    this.worker = w;
    this.port = new BatchPort<WorkerIn>(w);
    w.unref();
    if (this.smtpOptions) this.post({ smtp: this.smtpOptions });
    w.on('message', (batch: FromWorker[]) => {
      for (const m of batch) this.received(m);
    });
    w.on('error', (err) => this.log.error({ err: err.message }, 'outbound worker failed; signing on the main thread'));
    w.on('exit', () => {
      if (this.worker !== w) return;
      this.worker = null;
      this.port = null;
      this.ready = false;
      this.failures++;
      this.takeBack();
      if (!this.stopped) this.start();
    });
  }

  private received(m: FromWorker): void {
    if (m.open !== undefined) this.smtpCounts.open = m.open;
    if (m.idlePools !== undefined) this.smtpCounts.idlePools = m.idlePools;
    if (m.ready) {
      this.ready = true;
      if (!this.closing) this.postSends();
      return;
    }
    if (m.idleClosed !== undefined) {
      const n = this.idle.get(m.idleClosed) ?? 0;
      if (n > 1) this.idle.set(m.idleClosed, n - 1);
      else this.idle.delete(m.idleClosed);
      return this.onIdleClosed(m.idleClosed);
    }
    if (m.closedAll) return this.closed?.();
    if (m.id === undefined) return;
    const s = this.sends.get(m.id);
    if (s) {
      this.sends.delete(m.id);
      const r = m.sent ?? lost(s.t, s.rcpts, m.error ?? 'internal error');
      if (!r.closed && s.pool !== undefined) this.idle.set(s.pool, (this.idle.get(s.pool) ?? 0) + 1);
      return s.resolve(r);
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.raw) p.resolve(Buffer.from(m.raw));
    else p.reject(new Error(m.error ?? 'signing failed'));
  }

  /**
   * Jobs the worker took with it are done on this thread instead; its transactions end deferred (their leases bring
   * the recipients back), its idle sessions are reported gone.
   */
  private takeBack(): void {
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const p of jobs) composeAndSign(p.job).then(p.resolve, p.reject);
    const sends = [...this.sends.values()];
    this.sends.clear();
    this.waitingSends = [];
    for (const s of sends) s.resolve(lost(s.t, s.rcpts, 'the outbound worker stopped'));
    this.forgetIdle();
  }

  /** The worker is gone: so are its idle sessions (the scheduler counts them open until told). */
  private forgetIdle(): void {
    this.smtpCounts.open = 0;
    this.smtpCounts.idlePools = 0;
    const idle = [...this.idle];
    this.idle.clear();
    for (const [key, n] of idle) for (let i = 0; i < n; i++) this.onIdleClosed(key);
  }

  /**
   * After a burst, once the delivery loop is idle: the worker's sessions say QUIT and the thread ends, its heap and
   * malloc arena back to the system (~50 MiB); the next job starts it again (meanwhile jobs run on this thread).
   */
  trim(): Promise<void> {
    return this.rest();
  }

  private async rest(): Promise<void> {
    const w = this.worker;
    if (!w || !this.ready || this.pending.size || this.sends.size) return;
    this.closeSmtp();
    await this.closing;
    this.closing = null;
    this.closed = null;
    if (this.worker !== w) return;
    if (this.pending.size || this.sends.size) {
      if (this.smtpOptions) this.post({ smtp: this.smtpOptions }); // work came meanwhile: sessions again
      this.postSends();
      return;
    }
    this.worker = null;
    this.port = null;
    this.ready = false;
    await w.terminate();
    this.forgetIdle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.closing;
    this.closing = null;
    this.closed = null;
    const w = this.worker;
    this.worker = null;
    this.ready = false;
    this.takeBack();
    await w?.terminate();
  }
}
