// The operator HTTP API under /admin/v1 (operations.md "Queue control"): off (404 for all of /admin) unless
// MTA_ADMIN_TOKEN is set; then `Authorization: Bearer <token>`, compared in constant time. Team API keys never pass.
import { createHash, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type Koa from 'koa';
import { ApiError } from '../../core/errors.js';
import { jsonBody, type State, type KoaCtx } from '../middleware.js';
import type { MountFn } from '../deps.js';
import { bodyBudget } from '../../services/body-budget.js';
import { queueRoutes, siteRoutes } from './routes.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Whether the Authorization header carries exactly the admin token (hashes compared: no length leak). */
export function adminAllowed(token: string, authorization: string): boolean {
  const m = /^Bearer (\S+)$/.exec(authorization);
  return m !== null && timingSafeEqual(digest(m[1]), digest(token));
}

export const adminMount: MountFn = (koa, deps) => {
  const token = deps.app.config.adminToken;
  const router = new Router<State>({ prefix: '/admin/v1' });
  queueRoutes(router, deps.app);
  siteRoutes(router, deps.app);
  const routes = router.routes();
  const body = jsonBody(deps.app.config.maxBodyBytes, bodyBudget(deps.app));
  koa.use(async (ctx: KoaCtx, next: Koa.Next) => {
    if (ctx.path !== '/admin' && !ctx.path.startsWith('/admin/')) return next();
    if (token === undefined) throw new ApiError('not_found', 'route_not_found', `No route ${ctx.method} ${ctx.path}.`);
    if (!adminAllowed(token, ctx.get('Authorization')))
      throw new ApiError(
        'authentication_error',
        'invalid_admin_token',
        'Send Authorization: Bearer <MTA_ADMIN_TOKEN>.',
      );
    ctx.set('Cache-Control', 'no-store');
    await body(ctx, () => routes(ctx as never, async () => {}));
    if (ctx.body === undefined)
      throw new ApiError('not_found', 'route_not_found', `No route ${ctx.method} ${ctx.path}.`);
  });
};
