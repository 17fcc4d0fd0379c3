// /v1/suppressions, /v1/credits and /v1/api-keys.
import type Router from '@koa/router';
import { listSuppressions, addSuppression, removeSuppression } from '../../services/suppressions.js';
import { balance } from '../../services/credits.js';
import { createKeyAs, listKeys, revokeKey } from '../../services/keys.js';
import { presentKey } from '../../services/present.js';
import { CreateKey, CreateSuppression, ListQuery } from '../schemas.js';
import { validator } from '../validate.js';
import { limitOf, principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkPage = validator(ListQuery);
const checkSuppression = validator(CreateSuppression);
const checkKey = validator(CreateKey);

export function accountRoutes(r: Router, { app, auth }: Deps) {
  r.get('/suppressions', auth('emails:read'), async (ctx: KoaCtx) => {
    const q = checkPage(ctx.query);
    ctx.body = await listSuppressions(app, principal(ctx).teamId, limitOf(q.limit), q.cursor);
  });
  r.post('/suppressions', auth('emails:send'), async (ctx: KoaCtx) => {
    const b = checkSuppression(ctx.request.body);
    const res = await addSuppression(app, principal(ctx), b.address, b.reason ?? 'manual');
    ctx.status = res.created ? 201 : 200;
    ctx.body = res.suppression;
  });
  r.delete('/suppressions/:address', auth('emails:send'), async (ctx: KoaCtx) => {
    await removeSuppression(app, principal(ctx), ctx.params.address);
    ctx.status = 204;
  });
  r.get('/credits', auth(), async (ctx: KoaCtx) => {
    ctx.body = await balance(app, principal(ctx).teamId);
  });
  r.post('/api-keys', auth('keys:write'), async (ctx: KoaCtx) => {
    const b = checkKey(ctx.request.body);
    const { row, key } = await createKeyAs(app, principal(ctx), {
      mode: b.mode,
      scopes: b.scopes,
      name: b.name ?? null,
    });
    ctx.status = 201;
    ctx.body = presentKey(row, key);
  });
  r.get('/api-keys', auth('keys:write'), async (ctx: KoaCtx) => {
    ctx.body = {
      object: 'list',
      data: (await listKeys(app, principal(ctx))).map((k) => presentKey(k)),
      has_more: false,
      next_cursor: null,
    };
  });
  r.delete('/api-keys/:id', auth('keys:write'), async (ctx: KoaCtx) => {
    ctx.body = presentKey(await revokeKey(app, ctx.params.id, principal(ctx)));
  });
}
