// Back-off for operator-password sign-in: per client address (10 failures in 10 minutes lock that
// address for the rest of the window) and global (20 failures in a minute from any addresses lock every
// attempt, correct or not, for 1 minute, doubling on each new lock up to an hour). Clock passed in.

export interface Refusal { scope: 'address' | 'global'; retryAfterSec: number }

export const PER_ADDRESS = { failures: 10, windowMs: 600_000 };
export const GLOBAL = { failures: 20, windowMs: 60_000, firstLockMs: 60_000, maxLockMs: 3_600_000 };

export class SignInGuard {
  private byAddress = new Map<string, { n: number; since: number }>();
  private recent: number[] = []; // times of failures in the global window
  private lockedUntil = 0;
  private lockMs = 0; // length of the last global lock; 0 after a quiet period
  constructor(private now: () => number) {}

  /** Null when a sign-in attempt from `ip` may be checked now, else why not and for how long. */
  refusal(ip: string): Refusal | null {
    const t = this.now();
    if (t < this.lockedUntil) return { scope: 'global', retryAfterSec: Math.ceil((this.lockedUntil - t) / 1000) };
    const f = this.byAddress.get(ip);
    if (f && f.since > t - PER_ADDRESS.windowMs && f.n >= PER_ADDRESS.failures) {
      return { scope: 'address', retryAfterSec: Math.ceil((f.since + PER_ADDRESS.windowMs - t) / 1000) };
    }
    return null;
  }

  /** Records a failed attempt; returns the new global lock's length in ms when this failure started one. */
  failed(ip: string): number | null {
    const t = this.now();
    const f = this.byAddress.get(ip);
    const cur = f && f.since > t - PER_ADDRESS.windowMs ? f : { n: 0, since: t };
    cur.n += 1;
    if (this.byAddress.size >= 10_000 && !this.byAddress.has(ip)) this.byAddress.clear();
    this.byAddress.set(ip, cur);
    this.recent = this.recent.filter((x) => x > t - GLOBAL.windowMs);
    this.recent.push(t);
    if (this.recent.length < GLOBAL.failures) return null;
    // A lock after a quiet hour starts small again; one soon after the last doubles it.
    const quiet = t - this.lockedUntil > GLOBAL.maxLockMs;
    this.lockMs = quiet || this.lockMs === 0 ? GLOBAL.firstLockMs : Math.min(this.lockMs * 2, GLOBAL.maxLockMs);
    this.lockedUntil = t + this.lockMs;
    this.recent = [];
    return this.lockMs;
  }
}
