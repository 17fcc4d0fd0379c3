// /v1/inbound: mail received at the team's receiving domains (docs/receiving.md): list, one message, its raw copy
// (message/rfc822) and its attachments' bytes. Scope emails:read; a test key sees none.
import type Router from '@koa/router';
import { getInbound, inboundAttachment, inboundRaw, listInbound } from '../../services/inbound-mail.js';
import { ListQuery } from '../schemas.js';
import { validator } from '../validate.js';
import { limitOf, principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkPage = validator(ListQuery);

export function inboundRoutes(r: Router, { app, auth }: Deps) {
  r.get('/inbound', auth('emails:read'), async (ctx: KoaCtx) => {
    const q = checkPage(ctx.query);
    ctx.body = await listInbound(app, principal(ctx), limitOf(q.limit), q.cursor);
  });
  r.get('/inbound/:id', auth('emails:read'), async (ctx: KoaCtx) => {
    ctx.body = await getInbound(app, principal(ctx), ctx.params.id);
  });
  r.get('/inbound/:id/raw', auth('emails:read'), async (ctx: KoaCtx) => {
    const raw = await inboundRaw(app, principal(ctx), ctx.params.id);
    ctx.type = 'message/rfc822';
    ctx.body = raw;
  });
  r.get('/inbound/:id/attachments/:n', auth('emails:read'), async (ctx: KoaCtx) => {
    const a = await inboundAttachment(app, principal(ctx), ctx.params.id, ctx.params.n);
    ctx.type = a.content_type;
    ctx.set('Content-Disposition', 'attachment');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = a.content;
  });
}
