// /v1/stats: a team's counts per status in buckets of an hour or a day, with bounce and complaint rates
// (decisions.md "Statistics"); /v1/stats/sites: per receiving site (decisions.md "Statistics by provider"). Read
// from counters kept as events are written, in the key's mode.
import type Router from '@koa/router';
import { getStats } from '../../services/stats.js';
import { getSiteStats } from '../../services/site-stats.js';
import { SiteStatsQuery, StatsQuery } from '../schemas.js';
import { validator } from '../validate.js';
import { principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkStats = validator(StatsQuery);
const checkSiteStats = validator(SiteStatsQuery);

export function statsRoutes(r: Router, { app, auth }: Deps) {
  r.get('/stats', auth('emails:read'), async (ctx: KoaCtx) => {
    ctx.body = await getStats(app, principal(ctx), checkStats(ctx.query));
  });
  r.get('/stats/sites', auth('emails:read'), async (ctx: KoaCtx) => {
    ctx.body = {
      ...(await getSiteStats(app, principal(ctx), checkSiteStats(ctx.query))),
      has_more: false,
      next_cursor: null,
    };
  });
}
