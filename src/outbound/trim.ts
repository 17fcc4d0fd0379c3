// Gives memory back after a burst of mail: a full garbage collection (V8 then unmaps the heap pages the burst left
// empty). Used by the delivery loop once it has sat idle after real work, on its thread and the signing worker's.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: ((o?: object) => void) | null | undefined;

/**
 * Runs a full GC, then one of the last-resort kind (freed pages unmapped rather than kept pooled: RSS really
 * drops); false when this V8 cannot be asked for one (nothing done).
 */
export function fullGc(): boolean {
  if (collect === undefined) {
    try {
      // The gc() function without starting node with --expose-gc: exposed to contexts made from now on.
      v8.setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as (o?: object) => void;
    } catch {
      collect = null;
    }
  }
  if (collect) {
    // Compacting every page (not only the most fragmented) lets the old space give back the pages a burst spread
    // its survivors over; only for these two collections.
    v8.setFlagsFromString('--compact-on-every-full-gc');
    try {
      collect(); // a full mark-compact
      collect({ type: 'major', execution: 'sync', flavor: 'last-resort' }); // then the pooled pages go back
    } finally {
      v8.setFlagsFromString('--no-compact-on-every-full-gc');
    }
  }
  return collect !== null;
}

/**
 * Calls `trim` once the loop has been idle for `idleMs` after at least `minWork` results since the last trim.
 * `busy(n)`: n results written; `idle()`: nothing held or in flight any more.
 */
export class IdleTrim {
  private work = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private trim: () => void,
    private opts: { idleMs: number; minWork: number } = { idleMs: 1000, minWork: 500 },
  ) {}

  /** Results written since the last trim. */
  get pending(): number {
    return this.work;
  }

  busy(n: number): void {
    this.work += n;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  idle(): void {
    if (this.timer || this.work < this.opts.minWork) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.work = 0;
      this.trim();
    }, this.opts.idleMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
