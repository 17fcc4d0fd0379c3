// Composing and signing on a worker thread (the second core), so the delivery loop's thread keeps to SMTP and
// the store. Until the worker is up, or if it dies, jobs run on this thread: a worker problem never stops mail.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { composeAndSign, type SignJob, type Signer } from './compose.js';

const BOOT = new URL('./sign-worker.mjs', import.meta.url);

export class SignerPool {
  private worker: Worker | null = null;
  private ready = false;
  private next = 1;
  private pending = new Map<number, { resolve(b: Buffer): void; reject(e: Error): void; job: SignJob }>();
  private failures = 0;

  constructor(private log: Logger) {}

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
    if (this.worker || this.failures >= 3) return;
    const w = new Worker(BOOT);
    this.worker = w;
    w.unref();
    w.on('message', (m: { ready?: true; id: number; raw?: ArrayBuffer; error?: string }) => {
      if (m.ready) { this.ready = true; return; }
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.raw) p.resolve(Buffer.from(m.raw)); else p.reject(new Error(m.error ?? 'signing failed'));
    });
    w.on('error', (err) => this.log.error({ err: err.message }, 'signing worker failed; signing on the main thread'));
    w.on('exit', () => {
      this.worker = null; this.ready = false; this.failures++;
      // Jobs the worker took with it are done here instead.
      const jobs = [...this.pending.values()];
      this.pending.clear();
      for (const p of jobs) composeAndSign(p.job).then(p.resolve, p.reject);
      if (!this.stopped) this.start();
    });
  }

  private stopped = false;
  async stop(): Promise<void> {
    this.stopped = true;
    const w = this.worker;
    this.worker = null; this.ready = false;
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const p of jobs) composeAndSign(p.job).then(p.resolve, p.reject);
    await w?.terminate();
  }
}
