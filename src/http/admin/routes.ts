// Routes of the operator API (/admin/v1): the queue (summary, list, hold/release/retry/purge with the
// filters as query parameters or a JSON body) and delivery sites (list, suspend, resume) and the sending IPs' health. Same JSON as the CLI.
import type Router from '@koa/router';
import { ApiError, invalid } from '../../core/errors.js';
import { QUEUE_ACTIONS, type QueueAction } from '../../core/status.js';
import { FILTER_NAMES, parseFilter, queueAction, queueList, queueSummary, type GroupBy } from '../../services/queue.js';
import { ControlError, listSites, siteCommand } from '../../services/delivery-control.js';
import { ipHealth } from '../../services/ip-health.js';
import type { State, KoaCtx } from '../middleware.js';
import type { Ctx } from '../../services/context.js';

type R = Router<State>;
const query = (ctx: KoaCtx) => ctx.query as Record<string, string | undefined>;

function filtersOf(app: Ctx, src: Record<string, unknown>) {
  const input = Object.fromEntries(FILTER_NAMES.filter((k) => src[k] !== undefined).map((k) => [k, src[k]]));
  return parseFilter(app, input);
}

/** Rejects parameters that are neither filters nor one of `extra`. */
function known(src: Record<string, unknown>, extra: string[]): void {
  for (const k of Object.keys(src))
    if (!(FILTER_NAMES as readonly string[]).includes(k) && !extra.includes(k))
      throw invalid(k, `Unknown parameter ${k}.`);
}

export function queueRoutes(r: R, app: Ctx): void {
  r.get('/queue/summary', async (ctx) => {
    const q = query(ctx);
    known(q, ['by']);
    const by = q.by ?? 'site';
    if (!['site', 'domain', 'team', 'state'].includes(by)) throw invalid('by', 'by is site, domain, team or state.');
    ctx.body = await queueSummary(app, by as GroupBy, await filtersOf(app, q));
  });
  r.get('/queue', async (ctx) => {
    const q = query(ctx);
    known(q, ['limit']);
    const limit = Number(q.limit ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10000) throw invalid('limit', 'limit is 1 to 10000.');
    ctx.body = await queueList(app, await filtersOf(app, q), limit);
  });
  r.post('/queue/:action', async (ctx) => {
    const action = ctx.params.action as QueueAction;
    if (!(QUEUE_ACTIONS as readonly string[]).includes(action)) return;
    const src = { ...query(ctx), ...(ctx.request.body as Record<string, unknown>) };
    known(src, ['all', 'reason']);
    const all = src.all === true || src.all === 'true';
    if (src.reason !== undefined && (typeof src.reason !== 'string' || src.reason.length > 500))
      throw invalid('reason', 'reason is a text of at most 500 characters.');
    ctx.body = await queueAction(app, action, await filtersOf(app, src), {
      all,
      note: src.reason as string | undefined,
    });
  });
}

/** Seconds from a body field: a whole number ≥ 1, or absent. */
function seconds(v: unknown): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
    throw invalid('seconds', 'seconds is a whole number, 1 or more.');
  return v;
}

export function siteRoutes(r: R, app: Ctx): void {
  r.get('/sites', async (ctx) => {
    ctx.body = await listSites(app);
  });
  r.get('/ips', async (ctx) => {
    ctx.body = await ipHealth(app);
  });
  r.post('/sites/:site/:kind', async (ctx) => {
    const kind = ctx.params.kind as 'suspend' | 'resume';
    if (kind !== 'suspend' && kind !== 'resume') return;
    const b = ctx.request.body as Record<string, unknown>;
    const opt = (k: string) => (typeof b[k] === 'string' ? (b[k] as string) : null);
    const c = {
      kind,
      site: ctx.params.site,
      ip: opt('ip'),
      reason: opt('reason'),
      seconds: kind === 'suspend' ? seconds(b.seconds) : null,
    };
    try {
      ctx.body = await siteCommand(app, c);
    } catch (err) {
      if (!(err instanceof ControlError)) throw err;
      if (/^no site/.test(err.message)) throw new ApiError('not_found', 'site_not_found', err.message);
      throw invalid(/IP|ip/.test(err.message) ? 'ip' : 'seconds', err.message);
    }
  });
}
