// A worker's side of the node's API rate limit (src/http/cluster.ts): tokens the primary lends out of a key's bucket
// (RateLimiter.takeUpTo), spent here without a round trip, the rest given back (RateLimiter.give).
import type { TakeResult } from '../core/rate-limit.js';

/** How long a worker may spend tokens the primary lent it before it gives back the rest (MTA_HTTP_LEASE_MS). */
export const LEASE_MS = 250;
/** Most tokens lent at once: a share of what the bucket holds (never more than half of it over the processes). */
export const LEASE_MAX = 64;

export type Lease = TakeResult & { taken: number };

/** A lease this big or bigger is renewed before it runs out (near its limit, a key gets small leases, asked on use). */
const PREFETCH_FROM = 8;

interface Held {
  tokens: number;
  until: number;
  /** The last lease: its report, and how many it lent. */
  last: Lease;
  asking?: Promise<void>;
}

/**
 * A worker's side of the node's rate limits: the primary lends tokens of a key's bucket, spent here without a round
 * trip, renewed in the background while the key is busy; what is left when a key goes quiet for the lease time (LEASE_MS by default) goes back.
 * The node never takes more than its bucket holds (tokens are only ever lent out of it); a key near its limit gets
 * leases of one token, asked for on use, so the last tokens go to whichever process asks first.
 */
export class Leases {
  private held = new Map<string, Held>();
  constructor(
    private ask: (key: string) => Promise<Lease>,
    private giveBack: (key: string, n: number) => void,
    private leaseMs = LEASE_MS,
  ) {
    setInterval(() => this.sweep(Date.now()), leaseMs).unref();
  }

  take(key: string): TakeResult | Promise<TakeResult> {
    const h = this.held.get(key);
    if (h && h.tokens >= 1) return this.spend(key, h);
    return (h?.asking ?? this.renew(key)).then(() => {
      const now = this.held.get(key);
      if (now && now.tokens >= 1) return this.spend(key, now);
      const r = now?.last;
      return { ok: false, remaining: 0, reset: r?.reset ?? 1, retryAfter: r?.retryAfter ?? 1 };
    });
  }

  private spend(key: string, h: Held): TakeResult {
    h.tokens--;
    h.until = Date.now() + this.leaseMs;
    if (h.tokens < h.last.taken / 2 && h.last.taken >= PREFETCH_FROM && !h.asking) void this.renew(key);
    return { ok: true, remaining: h.last.remaining + h.tokens, reset: h.last.reset, retryAfter: 1 };
  }

  /** Asks the primary for another lease of the key (one at a time); its tokens join those held. */
  private renew(key: string): Promise<void> {
    const h: Held = this.held.get(key) ?? {
      tokens: 0,
      until: 0,
      last: { ok: false, taken: 0, remaining: 0, reset: 1, retryAfter: 1 },
    };
    this.held.set(key, h);
    const done = () => {
      h.asking = undefined;
    };
    h.asking = this.ask(key).then(
      (r) => {
        h.tokens += r.taken;
        h.last = r;
        h.until = Date.now() + this.leaseMs;
        done();
      },
      (err: Error) => {
        done();
        throw err;
      },
    );
    return h.asking;
  }

  private sweep(now: number): void {
    for (const [key, h] of this.held)
      if (h.until <= now && !h.asking) {
        this.held.delete(key);
        if (h.tokens > 0) this.giveBack(key, h.tokens);
      }
  }
}
