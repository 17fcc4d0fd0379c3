// Runs parseReport in a small pool of worker threads, so a report never blocks the event loop. Workers start on
// the first report and stop after idling; a report over its time budget ends its worker and reads as `error: 'timeout'`.
import { Worker } from 'node:worker_threads';
import type { Report } from './parse.js';
import type { DmarcReading } from './dmarc.js';
import type { MailReading, MailUnread } from '../core/inbound-mail.js';

export interface ParsePool {
  /** The reading of one message; an empty `kind: 'other'` report with `error` when it could not be read. */
  parse(raw: Buffer, timeoutMs?: number): Promise<Report>;
  /** A DMARC aggregate report's reading (inbound/dmarc.ts) within the same budget; `error: 'timeout'|'failed'` else. */
  parseDmarc(raw: Buffer, truncated: boolean, timeoutMs?: number): Promise<DmarcReading>;
  /** A message received at a team's domain (inbound/mail.ts) within the budget; `{error}` when not read. */
  parseMail(raw: Buffer, timeoutMs?: number): Promise<MailReading | MailUnread>;
  close(): Promise<void>;
  /** worker threads running now (started or booting) */
  readonly workers: number;
}
export interface ParsePoolOptions {
  /** most worker threads at once (default 2); none until the first report */
  size?: number;
  /** a worker with nothing to read for this long ends (default 30 s); the next report starts one again */
  idleMs?: number;
  /** parse time allowed per report in ms (default 2000); the wait in the queue does not count */
  timeoutMs?: number;
  /** told when a report is abandoned (timeout) or a worker dies while reading one */
  onAbandon?: (why: 'timeout' | 'failed', detail: string) => void;
}

export const DEFAULT_PARSE_TIMEOUT_MS = 2000;
/** Boot from source: registers tsx in the worker (its own loader thread and compiler: seconds of CPU per start). */
const BOOT = new URL('./parse-worker.mjs', import.meta.url);
/**
 * The precompiled service (dist/mta.mjs; scripts/build.mjs defines MTA_PREBUILT_WORKER as "1" there) starts its
 * workers from dist/parse-worker.mjs, built with it; so do the tests while the bundle is fresh
 * (test/helpers/prebuilt.ts). Read at each start.
 */
const boot = (): URL =>
  process.env.MTA_PREBUILT_WORKER === '1' ? new URL('../../dist/parse-worker.mjs', import.meta.url) : BOOT;
/** Workers that die before they are ready, in a row, before the pool gives up (a broken install, not a report). */
const MAX_BOOT_FAILURES = 3;

/** What a report that could not be read says: nothing, so it changes nothing (it is stored for the operator). */
export function unreadReport(error: 'timeout' | 'failed'): Report {
  return { kind: 'other', recipients: [], original: { message_id: null, email_id: null, return_path: null }, error };
}

type Answer = { report?: Report; dmarc?: DmarcReading; mail?: MailReading; error?: string };
interface Job {
  raw: Buffer;
  /** a DMARC report (and whether the message was cut), a received message ('mail'), else a bounce or complaint */
  dmarc: { truncated: boolean } | 'mail' | null;
  budget: number;
  /** the reading in the worker's answer, or undefined when it has none */
  take(m: Answer): unknown;
  /** what the job reads as when abandoned */
  unread(why: 'timeout' | 'failed'): unknown;
  resolve(r: unknown): void;
  reject(err: Error): void;
}
interface Slot {
  worker: Worker;
  booted: boolean;
  busy: Job | null;
  timer: NodeJS.Timeout | null;
  idle: NodeJS.Timeout | null;
  ending: boolean;
}

class Pool implements ParsePool {
  private readonly queue: Job[] = [];
  private readonly slots = new Set<Slot>();
  private closed = false;
  private bootFailures = 0;
  private broken: Error | null = null;

  constructor(
    private readonly opts: ParsePoolOptions,
    private readonly budget: number,
  ) {}

  get workers(): number {
    return this.slots.size;
  }

  parse(raw: Buffer, timeoutMs = this.budget): Promise<Report> {
    return this.submit<Report>(raw, null, timeoutMs, (m) => m.report, unreadReport);
  }

  parseDmarc(raw: Buffer, truncated: boolean, timeoutMs = this.budget): Promise<DmarcReading> {
    return this.submit<DmarcReading>(
      raw,
      { truncated },
      timeoutMs,
      (m) => m.dmarc,
      (why) => ({
        ok: false,
        error: why,
        detail: why === 'timeout' ? `not read within ${timeoutMs} ms` : 'worker failed',
      }),
    );
  }

  parseMail(raw: Buffer, timeoutMs = this.budget): Promise<MailReading | MailUnread> {
    return this.submit<MailReading | MailUnread>(
      raw,
      'mail',
      timeoutMs,
      (m) => m.mail,
      (error) => ({ error }),
    );
  }

  private submit<T>(
    raw: Buffer,
    dmarc: Job['dmarc'],
    budget: number,
    take: (m: Answer) => T | undefined,
    unread: (why: 'timeout' | 'failed') => T,
  ): Promise<T> {
    if (this.closed || this.broken) return Promise.reject(this.broken ?? new Error('report parser pool is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ raw, dmarc, budget, take, unread, resolve: resolve as (r: unknown) => void, reject });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.fail(new Error('report parser pool is closed'));
    await Promise.all(
      [...this.slots].map((s) => {
        s.ending = true;
        return s.worker.terminate();
      }),
    );
  }

  /** Takes the slot's job off it (clearing its budget timer). */
  private take(slot: Slot): Job | null {
    const job = slot.busy;
    if (slot.timer) clearTimeout(slot.timer);
    slot.busy = null;
    slot.timer = null;
    return job;
  }

  /** Ends a worker whose report is over budget or failed: the report reads as unread; 'exit' replaces the worker. */
  private abandon(slot: Slot, why: 'timeout' | 'failed', detail: string): void {
    const job = this.take(slot);
    if (job) {
      this.opts.onAbandon?.(why, detail);
      job.resolve(job.unread(why));
    }
    if (!slot.ending) {
      slot.ending = true;
      void slot.worker.terminate();
    }
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (!this.queue.length) break;
      if (!slot.booted || slot.ending || slot.busy) continue;
      const job = this.queue.shift() as Job;
      if (slot.idle) clearTimeout(slot.idle);
      slot.idle = null;
      slot.busy = job;
      slot.timer = setTimeout(() => this.abandon(slot, 'timeout', `not read within ${job.budget} ms`), job.budget);
      // a view is cloned with its whole ArrayBuffer (Buffer.concat, a slab): send only the message's bytes
      const bytes = job.raw.byteLength === job.raw.buffer.byteLength ? job.raw : new Uint8Array(job.raw);
      const dmarc = job.dmarc;
      slot.worker.postMessage(
        dmarc === 'mail' ? { mail: bytes } : dmarc ? { dmarc: bytes, truncated: dmarc.truncated } : bytes,
      );
    }
    // Reports still waiting: one more worker for each while under the size (a booting one counts as free).
    const booting = [...this.slots].filter((s) => !s.booted && !s.ending).length;
    let want = this.queue.length - booting;
    while (want-- > 0 && this.slots.size < this.size && !this.closed && !this.broken) this.spawn();
    for (const slot of this.slots) if (slot.booted && !slot.busy && !slot.ending && !slot.idle) this.idleOut(slot);
  }

  private get size(): number {
    return Math.max(1, this.opts.size ?? 2);
  }

  /** A free worker ends after idleMs with nothing to read (memory back to the process). */
  private idleOut(slot: Slot): void {
    slot.idle = setTimeout(() => {
      slot.idle = null;
      if (slot.busy || slot.ending) return;
      slot.ending = true;
      void slot.worker.terminate();
    }, this.opts.idleMs ?? 30_000);
    slot.idle.unref();
  }

  private fail(err: Error): void {
    for (const job of this.queue.splice(0)) job.reject(err);
    for (const slot of this.slots) this.take(slot)?.reject(err);
  }

  private spawn(): void {
    const worker = new Worker(boot(), { execArgv: [], resourceLimits: { maxOldGenerationSizeMb: 256 } });
    const slot: Slot = { worker, booted: false, busy: null, timer: null, idle: null, ending: false };
    let lastError: Error | null = null;
    this.slots.add(slot);
    worker.unref(); // a job in progress keeps the process alive through its budget timer
    worker.on('message', (m: 'ready' | Answer) => {
      if (m === 'ready') {
        slot.booted = true;
        this.bootFailures = 0;
        return this.dispatch();
      }
      const reading = slot.busy?.take(m);
      if (reading !== undefined) this.take(slot)?.resolve(reading);
      else this.abandon(slot, 'failed', m.error ?? 'no report');
      this.dispatch();
    });
    worker.on('error', (err) => {
      lastError = err;
      this.abandon(slot, 'failed', err.message);
    });
    worker.on('exit', () => {
      this.slots.delete(slot);
      if (slot.idle) clearTimeout(slot.idle);
      this.abandon(slot, 'failed', 'worker exited');
      if (this.closed) return;
      if (!slot.booted && ++this.bootFailures >= MAX_BOOT_FAILURES) {
        this.broken = new Error(`report parser worker does not start: ${lastError?.message ?? 'it exited'}`);
        return this.fail(this.broken);
      }
      this.dispatch(); // a replacement only when reports are waiting
    });
  }
}

export function createParsePool(opts: ParsePoolOptions = {}): ParsePool {
  return new Pool(opts, opts.timeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS);
}
