// The per-key request limiter, one per running service (keyed by its store): the HTTP API and SMTP submission
// sessions take from the same buckets, so a key's MTA_RATE_LIMIT/MTA_RATE_BURST hold across both. Null when off.
import { RateLimiter, type Limiter } from '../core/rate-limit.js';
import type { DB } from '../store/db.js';
import type { Ctx } from './context.js';

const limiters = new WeakMap<DB, RateLimiter | null>();

export function keyLimiter(ctx: Ctx): RateLimiter | null {
  let l = limiters.get(ctx.db);
  if (l === undefined) {
    const { rateLimit, rateBurst } = ctx.config;
    l = rateLimit > 0 ? new RateLimiter(rateLimit, Math.max(rateBurst, 1), ctx.now) : null;
    limiters.set(ctx.db, l);
  }
  return l;
}

/**
 * The HTTP API's limiter: keyLimiter, or in an HTTP worker (services/siblings.ts) the primary's, so that one node
 * keeps one bucket per key whichever of its processes a request reaches.
 */
export function requestLimiter(ctx: Ctx): Limiter | null {
  const local = keyLimiter(ctx);
  const s = ctx.siblings;
  if (!local || s?.role !== 'worker') return local;
  return { rate: local.rate, burst: local.burst, take: (key) => s.take(key) };
}
