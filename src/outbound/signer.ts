// Composing and signing on a worker thread (the second core), so the delivery loop's thread keeps to SMTP and
// the store. Until the worker is up, or if it dies, jobs run on this thread: a worker problem never stops mail.
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { Plugin } from 'esbuild';
import { composeAndSign, type SignJob, type Signer } from './message.js';

const ENTRY = new URL('./sign-worker.ts', import.meta.url);
/** Fallback boot: registers tsx in the worker (a loader thread and a compiler of its own). */
const BOOT = new URL('./sign-worker.mjs', import.meta.url);

/**
 * mailauth's tools.js loads Joi and tldts for DKIM *verification* (public-key checks, alignment), which the worker
 * never does: the bundle gets an inert stand-in for both (~10 MiB less per worker). Signing is covered by a test
 * that verifies the worker's signatures.
 */
const VERIFY_ONLY: Plugin = {
  name: 'verify-only',
  setup(b) {
    b.onResolve({ filter: /^(joi|tldts)$/ }, (a) => ({ path: a.path, namespace: 'verify-only' }));
    b.onLoad({ filter: /.*/, namespace: 'verify-only' }, () => ({
      contents: 'const p = new Proxy(function () {}, { get: () => p, apply: () => p }); module.exports = p;',
      loader: 'js',
    }));
  },
};

let code: Promise<string | null> | null = null;
/**
 * The worker's code: sign-worker.ts and the little it imports (message.ts, dkim.ts, nodemailer's composer,
 * mailauth's canonicalisation), bundled once per process by esbuild (tsx's own compiler) into one CommonJS
 * script, so the thread starts without a TypeScript loader (~35 MiB less). null: esbuild unavailable.
 */
function bundle(): Promise<string | null> {
  code ??= import('esbuild')
    .then(async ({ build, stop }) => {
      const r = await build({
        entryPoints: [fileURLToPath(ENTRY)],
        bundle: true,
        platform: 'node',
        format: 'cjs',
        target: 'node20',
        write: false,
        logLevel: 'silent',
        plugins: [VERIFY_ONLY],
      });
      await stop(); // esbuild's service process is not needed any more
      return r.outputFiles[0].text;
    })
    .catch(() => null);
  return code;
}

/** Profiling flags pass to the worker; loaders (`--import tsx`) do not: its code is plain JavaScript. */
const workerArgv = () => process.execArgv.filter((a) => /^--(cpu-prof|heap-prof)/.test(a));

export class SignerPool {
  private worker: Worker | null = null;
  private ready = false;
  private next = 1;
  private pending = new Map<number, { resolve(b: Buffer): void; reject(e: Error): void; job: SignJob }>();
  private failures = 0;
  private stopped = false;
  private booting = false;

  constructor(private log: Logger) {}

  /** Whether jobs go to the worker thread now. */
  get onWorker(): boolean {
    return this.ready && this.worker !== null;
  }

  /** The Signer to give prepareEmail. */
  readonly sign: Signer = (job) => {
    if (!this.ready || !this.worker) return composeAndSign(job);
    const id = this.next++;
    return new Promise<Buffer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, job });
      this.worker!.postMessage({ id, job });
    });
  };

  start(): void {
    if (this.worker || this.booting || this.failures >= 3) return;
    this.stopped = false;
    this.booting = true;
    void bundle().then((js) => {
      code = null; // not kept (1.4 MB): a restart bundles again
      this.booting = false;
      if (!this.stopped && !this.worker) this.spawn(js);
    });
  }

  private spawn(js: string | null): void {
    const w = js === null ? new Worker(BOOT) : new Worker(js, { eval: true, execArgv: workerArgv() });
    this.worker = w;
    w.unref();
    w.on('message', (m: { ready?: true; id: number; raw?: ArrayBuffer; error?: string }) => {
      if (m.ready) {
        this.ready = true;
        return;
      }
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.raw) p.resolve(Buffer.from(m.raw));
      else p.reject(new Error(m.error ?? 'signing failed'));
    });
    w.on('error', (err) => this.log.error({ err: err.message }, 'signing worker failed; signing on the main thread'));
    w.on('exit', () => {
      if (this.worker !== w) return;
      this.worker = null;
      this.ready = false;
      this.failures++;
      this.takeBack();
      if (!this.stopped) this.start();
    });
  }

  /** Jobs the worker took with it are done on this thread instead. */
  private takeBack(): void {
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const p of jobs) composeAndSign(p.job).then(p.resolve, p.reject);
  }

  /** Asks the worker for a full GC (after a burst: its heap back to the system). */
  trim(): void {
    this.worker?.postMessage({ gc: true });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const w = this.worker;
    this.worker = null;
    this.ready = false;
    this.takeBack();
    await w?.terminate();
  }
}
