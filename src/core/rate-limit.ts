// The one rate limiter (API keys and client addresses, dashboard sign-in, SMTP submission sessions): token buckets by key in
// bounded memory (full buckets are dropped, at most `maxKeys` kept, least recently used first out). Clock passed in; pure.

export interface TakeResult {
  ok: boolean;
  /** Whole tokens left. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  reset: number;
  /** Seconds until one token is available (at least 1). */
  retryAfter: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/** Keys kept at most by default: ~100 bytes each, so about a megabyte. */
export const DEFAULT_MAX_KEYS = 10_000;

/** Token bucket per key: `rate` tokens a second, up to `burst`; a key never seen holds a full bucket. */
export class RateLimiter {
  private buckets = new Map<string, Bucket>(); // in order of last use, oldest first
  constructor(
    readonly rate: number,
    readonly burst: number,
    private now: () => number,
    readonly maxKeys = DEFAULT_MAX_KEYS,
  ) {}

  /** Buckets held now (never more than maxKeys). */
  get size(): number {
    return this.buckets.size;
  }

  /** Takes one token for `key` when one is there; reports the bucket either way. */
  take(key: string): TakeResult {
    const t = this.now();
    const b = this.level(key, t);
    const ok = b.tokens >= 1;
    if (ok) b.tokens -= 1;
    this.store(key, b, t);
    return this.report(ok, b);
  }

  /** The bucket of `key` without taking: `ok` when a token is there. */
  peek(key: string): TakeResult {
    const b = this.level(key, this.now());
    return this.report(b.tokens >= 1, b);
  }

  /** Forgets `key`: its bucket is full again. */
  refill(key: string): void {
    this.buckets.delete(key);
  }

  private level(key: string, t: number): Bucket {
    const b = this.buckets.get(key);
    if (!b) return { tokens: this.burst, at: t };
    return { tokens: Math.min(this.burst, b.tokens + (Math.max(0, t - b.at) / 1000) * this.rate), at: t };
  }

  private store(key: string, b: Bucket, t: number): void {
    this.buckets.delete(key); // re-inserted last: the map stays in order of use
    if (b.tokens < this.burst) this.buckets.set(key, b);
    this.sweep(t);
  }

  /** Drops the oldest buckets that have refilled (a couple per call), then any beyond maxKeys. */
  private sweep(t: number): void {
    let checked = 0;
    for (const [key, b] of this.buckets) {
      if (
        this.buckets.size <= this.maxKeys &&
        (checked++ >= 2 || b.tokens + ((t - b.at) / 1000) * this.rate < this.burst)
      )
        break;
      this.buckets.delete(key);
    }
  }

  private report(ok: boolean, b: Bucket): TakeResult {
    return {
      ok,
      remaining: Math.floor(b.tokens),
      reset: Math.ceil((this.burst - b.tokens) / this.rate),
      retryAfter: Math.max(1, Math.ceil((1 - b.tokens) / this.rate)),
    };
  }
}
