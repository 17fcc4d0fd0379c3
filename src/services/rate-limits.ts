// The per-key request limiter, one per running service (keyed by its store): the HTTP API and SMTP submission
// sessions take from the same buckets, so a key's MTA_RATE_LIMIT/MTA_RATE_BURST hold across both. Null when off.
import { RateLimiter } from '../core/rate-limit.js';
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
