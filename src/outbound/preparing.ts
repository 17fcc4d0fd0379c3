// Messages being composed and signed for the delivery loop: one preparation per email shared by all its
// domains' jobs (reference-counted), and at most `atOnce` running, so a big claim never starts thousands.
import type { EmailRow } from '../services/delivery.js';
import type { Prepared } from './compose.js';

export class Preparing {
  private running = new Map<number, { p: Promise<Prepared>; refs: number }>();
  private busy = 0;
  private waiting: (() => void)[] = [];

  constructor(
    private prepare: (e: EmailRow) => Promise<Prepared>,
    private atOnce = 32,
  ) {}

  /** Emails being prepared or waiting for their turn, and those joined since. */
  get size(): number {
    return this.running.size;
  }

  /** The email's prepared message (started now or joined); call release(seq) once done with it. */
  get(email: EmailRow): Promise<Prepared> {
    let c = this.running.get(email.seq);
    if (!c) {
      c = { p: this.limited(() => this.prepare(email)), refs: 0 };
      this.running.set(email.seq, c);
    }
    c.refs++;
    return c.p;
  }

  release(seq: number): void {
    const c = this.running.get(seq);
    if (c && --c.refs <= 0) this.running.delete(seq);
  }

  private limited<T>(fn: () => Promise<T>): Promise<T> {
    const go = (): Promise<T> => {
      this.busy++;
      return fn().finally(() => {
        this.busy--;
        this.waiting.shift()?.();
      });
    };
    if (this.busy < this.atOnce) return go();
    return new Promise<void>((r) => this.waiting.push(r)).then(go);
  }
}
