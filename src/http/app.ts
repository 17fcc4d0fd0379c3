// The Koa application: middleware order (request id → errors → body → routes) and the v1 router.
// Route files register themselves through ROUTES; other features add their entry there.
import Koa from 'koa';
import Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import { ApiError } from '../core/errors.js';
import { auth, errors, requestLog, unmatchedLimit, RateLimiter, type State, type KoaCtx } from './middleware.js';
import { emailRoutes } from './routes/emails.js';
import { accountRoutes } from './routes/account.js';
import { docsMount } from './docs.js';
import type { Ctx } from '../services/context.js';

export interface Deps {
  app: Ctx;
  auth: ReturnType<typeof auth>;
  /** Extra services features attach (webhooks, domains…), keyed by name. */
  ext: Record<string, unknown>;
}
export type RouteFn = (r: Router, deps: Deps) => void;

/** v1 route registrations, in order. */
const ROUTES: RouteFn[] = [emailRoutes, accountRoutes];

/** Non-versioned mounts (health, metrics, dashboard, tracking), added by main.ts. */
export type MountFn = (koa: Koa<State>, deps: Deps) => void;

export function buildApp(app: Ctx, opts: { routes?: RouteFn[]; mounts?: MountFn[]; ext?: Record<string, unknown>; healthy?: () => boolean } = {}) {
  const koa = new Koa<State>({ proxy: false });
  const limiter = app.config.rateLimit > 0 ? new RateLimiter(app.config.rateLimit, Math.max(app.config.rateBurst, 1), app.now) : null;
  const deps: Deps = { app, auth: auth(app, limiter), ext: opts.ext ?? {} };
  koa.use(requestLog(app));
  koa.use(errors(app));
  koa.use(unmatchedLimit(limiter));
  koa.use(async (ctx: KoaCtx, next) => {
    if (ctx.path === '/healthz') {
      const ok = opts.healthy ? opts.healthy() : true;
      ctx.status = ok ? 200 : 503;
      ctx.body = { status: ok ? 'ok' : 'starting' };
      return;
    }
    await next();
  });
  for (const m of [docsMount, ...(opts.mounts ?? [])]) m(koa, deps);

  const v1 = new Router<State>({ prefix: '/v1' });
  v1.use(bodyParser({ enableTypes: ['json'], jsonLimit: `${app.config.maxBodyBytes}b`, strict: true }));
  v1.use(async (ctx, next) => {
    const hasBody = ['POST', 'PUT', 'PATCH'].includes(ctx.method);
    if (hasBody && Number(ctx.get('Content-Length') || 0) > 0 && !ctx.is('application/json')) {
      throw new ApiError('validation_error', 'invalid_json', 'Send a JSON body with Content-Type: application/json.');
    }
    const body = ctx.request.body;
    if (hasBody && (body === null || typeof body !== 'object' || Array.isArray(body))) throw new ApiError('validation_error', 'invalid_json', 'The body must be a JSON object.');
    await next();
  });
  for (const fn of [...ROUTES, ...(opts.routes ?? [])]) fn(v1 as unknown as Router, deps);
  koa.use(v1.routes());
  return koa;
}
