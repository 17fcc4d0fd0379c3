// /v1/stats: a team's counts per status in buckets of an hour or a day, with bounce and complaint rates
// (decisions.md "Statistics"); read from counters kept as events are written, in the key's mode.
import type Router from '@koa/router';
import { getStats } from '../../services/stats.js';
import { StatsQuery } from '../schemas.js';
import { validator } from '../validate.js';
import { principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkStats = validator(StatsQuery);

export function statsRoutes(r: Router, { app, auth }: Deps) {
  r.get('/stats', auth('emails:read'), (ctx: KoaCtx) => {
    ctx.body = getStats(app, principal(ctx), checkStats(ctx.query));
  });
}
