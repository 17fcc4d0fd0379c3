// Message spacing for one (source IP, site): messages at least 1/rate apart, so in any window a site gets
// at most one message more than the rate allows for that window. Pure: `now` (ms) is always passed in.

/** Spacing state: the earliest time the next message may go. `intervalMs` 0 means no rate cap. */
export class Spacing {
  nextAt = -Infinity;

  /** ms to wait before the next message may go at `intervalMs` spacing (0: it may go now). */
  waitMs(intervalMs: number, now: number): number {
    return intervalMs > 0 && now < this.nextAt ? this.nextAt - now : 0;
  }

  /** Takes the slot if free at `now`; false (nothing changed) if not yet. */
  take(intervalMs: number, now: number): boolean {
    if (intervalMs <= 0) return true;
    if (now < this.nextAt) return false;
    this.nextAt = now + intervalMs;
    return true;
  }
}

/** The spacing interval of a rate in messages per ms (null: uncapped → 0), scaled by a throttle factor (1, ½, ¼ …). */
export function intervalOf(perMs: number | null, factor = 1): number {
  return perMs === null || perMs <= 0 ? 0 : 1 / (perMs * factor);
}
