// /v1/webhooks: endpoints (create, list, get, update, delete, rotate-secret), the per-endpoint
// delivery log and replays. Scope webhooks:write throughout; other teams' endpoints, and live ones for a test key, are 404.
import type Router from '@koa/router';
import type { Resolver } from 'node:dns/promises';
import * as svc from '../../services/webhooks.js';
import { ListQuery, WebhookBodies } from '../schemas.js';
import { validator } from '../validate.js';
import { limitOf, principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkCreate = validator(WebhookBodies.create);
const checkUpdate = validator(WebhookBodies.update);
const checkPage = validator(ListQuery);

export function webhookRoutes(resolver: Resolver) {
  return (r: Router, { app, auth }: Deps) => {
    const owner = (ctx: KoaCtx) => principal(ctx); // team and mode: a test key sees test endpoints only
    r.post('/webhooks', auth('webhooks:write'), async (ctx: KoaCtx) => {
      const b = checkCreate(ctx.request.body);
      ctx.body = await svc.createEndpoint(app, resolver, owner(ctx), b);
      ctx.status = 201;
    });
    r.get('/webhooks', auth('webhooks:write'), async (ctx: KoaCtx) => {
      const q = checkPage(ctx.query);
      ctx.body = await svc.listEndpoints(app, owner(ctx), limitOf(q.limit), q.cursor);
    });
    r.get('/webhooks/:id', auth('webhooks:write'), async (ctx: KoaCtx) => {
      ctx.body = svc.presentEndpoint(await svc.getEndpoint(app, owner(ctx), ctx.params.id));
    });
    r.patch('/webhooks/:id', auth('webhooks:write'), async (ctx: KoaCtx) => {
      await svc.getEndpoint(app, owner(ctx), ctx.params.id); // 404 before validating a stranger's body
      ctx.body = await svc.updateEndpoint(app, resolver, owner(ctx), ctx.params.id, checkUpdate(ctx.request.body));
    });
    r.delete('/webhooks/:id', auth('webhooks:write'), async (ctx: KoaCtx) => {
      ctx.body = await svc.deleteEndpoint(app, owner(ctx), ctx.params.id);
    });
    r.post('/webhooks/:id/rotate-secret', auth('webhooks:write'), async (ctx: KoaCtx) => {
      ctx.body = await svc.rotateEndpointSecret(app, owner(ctx), ctx.params.id);
    });
    r.get('/webhooks/:id/deliveries', auth('webhooks:write'), async (ctx: KoaCtx) => {
      const q = checkPage(ctx.query);
      ctx.body = await svc.listOutbox(app, owner(ctx), ctx.params.id, limitOf(q.limit), q.cursor);
    });
    r.post('/webhooks/:id/deliveries/:delivery_id/retry', auth('webhooks:write'), async (ctx: KoaCtx) => {
      ctx.body = await svc.replayOutboxRow(app, owner(ctx), ctx.params.id, ctx.params.delivery_id);
      ctx.status = 202;
    });
  };
}
