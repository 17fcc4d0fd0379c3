// Runs parseReport in a small pool of long-lived worker threads, so a report never blocks the event loop.
// Each report gets a time budget; one over it ends its worker (replaced at once) and reads as `error: 'timeout'`.
import { Worker } from 'node:worker_threads';
import type { Report } from './parse.js';

export interface ParsePool {
  /** The reading of one message; an empty `kind: 'other'` report with `error` when it could not be read. */
  parse(raw: Buffer, timeoutMs?: number): Promise<Report>;
  close(): Promise<void>;
}
export interface ParsePoolOptions {
  /** worker threads kept alive (default 2) */
  size?: number;
  /** parse time allowed per report in ms (default 2000); the wait in the queue does not count */
  timeoutMs?: number;
  /** told when a report is abandoned (timeout) or a worker dies while reading one */
  onAbandon?: (why: 'timeout' | 'failed', detail: string) => void;
}

export const DEFAULT_PARSE_TIMEOUT_MS = 2000;
const BOOT = new URL('./parse-worker.mjs', import.meta.url);
/** Workers that die before they are ready, in a row, before the pool gives up (a broken install, not a report). */
const MAX_BOOT_FAILURES = 3;

/** What a report that could not be read says: nothing, so it changes nothing (it is stored for the operator). */
export function unreadReport(error: 'timeout' | 'failed'): Report {
  return { kind: 'other', recipients: [], original: { message_id: null, email_id: null, return_path: null }, error };
}

interface Job { raw: Buffer; budget: number; resolve(r: Report): void; reject(err: Error): void }
interface Slot { worker: Worker; booted: boolean; busy: Job | null; timer: NodeJS.Timeout | null; ending: boolean }

export function createParsePool(opts: ParsePoolOptions = {}): ParsePool {
  const budget = opts.timeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS;
  const queue: Job[] = [];
  const slots = new Set<Slot>();
  let closed = false;
  let bootFailures = 0;
  let broken: Error | null = null;

  /** Takes the slot's job off it (clearing its budget timer). */
  const take = (slot: Slot): Job | null => {
    const job = slot.busy;
    if (slot.timer) clearTimeout(slot.timer);
    slot.busy = null;
    slot.timer = null;
    return job;
  };

  /** Ends a worker whose report is over budget or failed: the report reads as unread; 'exit' replaces the worker. */
  const abandon = (slot: Slot, why: 'timeout' | 'failed', detail: string) => {
    const job = take(slot);
    if (job) { opts.onAbandon?.(why, detail); job.resolve(unreadReport(why)); }
    if (!slot.ending) { slot.ending = true; void slot.worker.terminate(); }
  };

  const dispatch = () => {
    for (const slot of slots) {
      if (!queue.length) return;
      if (!slot.booted || slot.ending || slot.busy) continue;
      const job = queue.shift() as Job;
      slot.busy = job;
      slot.timer = setTimeout(() => abandon(slot, 'timeout', `not read within ${job.budget} ms`), job.budget);
      // a view is cloned with its whole ArrayBuffer (Buffer.concat, a slab): send only the message's bytes
      slot.worker.postMessage(job.raw.byteLength === job.raw.buffer.byteLength ? job.raw : new Uint8Array(job.raw));
    }
  };

  const fail = (err: Error) => {
    for (const job of queue.splice(0)) job.reject(err);
    for (const slot of slots) take(slot)?.reject(err);
  };

  const spawn = () => {
    const worker = new Worker(BOOT, { execArgv: [], resourceLimits: { maxOldGenerationSizeMb: 256 } });
    const slot: Slot = { worker, booted: false, busy: null, timer: null, ending: false };
    let lastError: Error | null = null;
    slots.add(slot);
    worker.unref(); // a job in progress keeps the process alive through its budget timer
    worker.on('message', (m: 'ready' | { report?: Report; error?: string }) => {
      if (m === 'ready') { slot.booted = true; bootFailures = 0; return dispatch(); }
      if (m.report) take(slot)?.resolve(m.report);
      else abandon(slot, 'failed', m.error ?? 'no report');
      dispatch();
    });
    worker.on('error', (err) => { lastError = err; abandon(slot, 'failed', err.message); });
    worker.on('exit', () => {
      slots.delete(slot);
      abandon(slot, 'failed', 'worker exited');
      if (closed) return;
      if (!slot.booted && ++bootFailures >= MAX_BOOT_FAILURES) {
        broken = new Error(`report parser worker does not start: ${lastError?.message ?? 'it exited'}`);
        return fail(broken);
      }
      spawn();
    });
  };

  for (let i = 0; i < Math.max(1, opts.size ?? 2); i++) spawn();
  return {
    parse(raw, timeoutMs = budget) {
      if (closed || broken) return Promise.reject(broken ?? new Error('report parser pool is closed'));
      return new Promise<Report>((resolve, reject) => { queue.push({ raw, budget: timeoutMs, resolve, reject }); dispatch(); });
    },
    async close() {
      closed = true;
      fail(new Error('report parser pool is closed'));
      await Promise.all([...slots].map((s) => { s.ending = true; return s.worker.terminate(); }));
    },
  };
}
