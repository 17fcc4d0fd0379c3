// Back-off for operator-password sign-in, on the HTTP rate limiter (../rate-limit): per client address
// 10 failures lock that address, which then regains one attempt every 10 minutes; globally a burst of 20
// failures from any addresses (refilling one every 3 s) locks every attempt, correct or not, for 1 minute,
// doubling on each new lock up to an hour. Memory is bounded by the limiter. Clock passed in.
import { RateLimiter } from '../rate-limit.js';
import type { Ctx } from '../../services/context.js';

export interface Refusal {
  scope: 'address' | 'global';
  retryAfterSec: number;
}

export const PER_ADDRESS = { failures: 10, refillMs: 600_000 };
export const GLOBAL = { failures: 20, windowMs: 60_000, firstLockMs: 60_000, maxLockMs: 3_600_000 };

export class SignInGuard {
  readonly byAddress: RateLimiter;
  private global: RateLimiter;
  private lockedUntil = 0;
  private lockMs = 0; // length of the last global lock; 0 after a quiet period
  constructor(private now: () => number) {
    this.byAddress = new RateLimiter(1000 / PER_ADDRESS.refillMs, PER_ADDRESS.failures, now);
    this.global = new RateLimiter((GLOBAL.failures * 1000) / GLOBAL.windowMs, GLOBAL.failures, now, 1);
  }

  /** Null when a sign-in attempt from `ip` may be checked now, else why not and for how long. */
  refusal(ip: string): Refusal | null {
    const t = this.now();
    if (t < this.lockedUntil) return { scope: 'global', retryAfterSec: Math.ceil((this.lockedUntil - t) / 1000) };
    const b = this.byAddress.peek(ip);
    return b.ok ? null : { scope: 'address', retryAfterSec: b.retryAfter };
  }

  /** Records a failed attempt; returns the new global lock's length in ms when this failure started one. */
  failed(ip: string): number | null {
    const t = this.now();
    this.byAddress.take(ip);
    this.global.take('*');
    if (this.global.peek('*').ok) return null;
    // A lock after a quiet hour starts small again; one soon after the last doubles it.
    const quiet = t - this.lockedUntil > GLOBAL.maxLockMs;
    this.lockMs = quiet || this.lockMs === 0 ? GLOBAL.firstLockMs : Math.min(this.lockMs * 2, GLOBAL.maxLockMs);
    this.lockedUntil = t + this.lockMs;
    this.global.refill('*');
    return this.lockMs;
  }
}

const guards = new WeakMap<object, SignInGuard>();
/** The service's guard (one per running service, keyed by its store: one back-off per node). */
export function signInGuard(app: Ctx): SignInGuard {
  let g = guards.get(app.db);
  if (!g) guards.set(app.db, (g = new SignInGuard(app.now)));
  return g;
}
