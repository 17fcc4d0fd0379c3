// The Koa application: middleware order (request id → errors → routes; under /v1 auth → rate limit → body)
// and the v1 router. Routes and mounts come only from features (features/*.ts), in feature order.
import Koa from 'koa';
import Router from '@koa/router';
import { auth, jsonBody, errors, requestLog, unmatchedLimit, type State, type KoaCtx } from './middleware.js';
import type { Deps, RouteFn, MountFn } from './deps.js';
import type { Ctx } from '../services/context.js';
import { keyLimiter } from '../services/rate-limits.js';
import { bodyBudget } from '../services/body-budget.js';
import { storeFailure } from '../services/store-health.js';

export type { Deps, RouteFn, MountFn };

export function buildApp(app: Ctx, opts: { routes?: RouteFn[]; mounts?: MountFn[]; healthy?: () => boolean } = {}) {
  const koa = new Koa<State>({ proxy: false });
  koa.on('error', afterAnswer(app));
  const limiter = keyLimiter(app); // shared with SMTP submission sessions
  // The body is read only once the key is authenticated and its rate limit taken.
  const authOnly = auth(app, limiter);
  const body = jsonBody(app.config.maxBodyBytes, bodyBudget(app));
  const authThenBody: Deps['auth'] = (scope) => {
    const a = authOnly(scope);
    return (ctx, next) => a(ctx, () => body(ctx, next));
  };
  const deps: Deps = { app, auth: authThenBody };
  koa.use(requestLog(app));
  koa.use(errors(app));
  koa.use(unmatchedLimit(limiter));
  koa.use(async (ctx: KoaCtx, next) => {
    if (ctx.path === '/healthz') {
      if (opts.healthy && !opts.healthy()) {
        ctx.status = 503;
        ctx.body = { status: 'starting' };
        return;
      }
      // A store that cannot write (a full disk) or reach its database: unhealthy, so that a load balancer sends the
      // traffic elsewhere.
      const failure = await storeFailure(app);
      ctx.status = failure ? 503 : 200;
      ctx.body = failure ? { status: 'unhealthy', reason: failure } : { status: 'ok' };
      return;
    }
    await next();
  });
  for (const m of opts.mounts ?? []) m(koa, deps);

  const v1 = new Router<State>({ prefix: '/v1' });
  for (const fn of opts.routes ?? []) fn(v1 as unknown as Router, deps);
  koa.use(v1.routes());
  return koa;
}

/** Errors of a connection or stream, not of the service: a client that went away mid-request. */
const CLIENT_GONE = new Set([
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'ERR_STREAM_PREMATURE_CLOSE',
  'HPE_INVALID_EOF_STATE',
]);

/**
 * What Koa reports outside the middleware (an error of the socket once the answer is under way, such as a client
 * that drops its upload half-way: "Parse Error"). Koa's default prints a bare stack trace to stderr; the logger says
 * it instead, as one JSON line: a client gone at debug level, anything else as an error.
 */
function afterAnswer(app: Ctx) {
  const log = app.log.child({ component: 'http' });
  return (err: Error & { code?: string }, ctx?: KoaCtx) => {
    const gone = CLIENT_GONE.has(err.code ?? '') || (ctx !== undefined && !ctx.req.complete);
    const at = { err: err.message, code: err.code, method: ctx?.method, path: ctx?.path };
    if (gone) log.debug(at, 'client closed the connection before its request was read (aborted)');
    else log.error(at, 'HTTP error outside a request handler');
  };
}
