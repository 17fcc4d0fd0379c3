// /v1/emails: send (one, or a batch of 1 to 100), list, fetch, events, cancel.
// A batch body is a JSON array: the route marks it before auth so the body reader accepts one.
import type Router from '@koa/router';
import type Koa from 'koa';
import { submitEmail, getEmail, listEmails, listEvents, cancelEmail } from '../../services/emails.js';
import { presentEmail } from '../../services/present.js';
import { forItem, submitBatch } from '../../services/email-batch.js';
import { SendEmail, SendBatch, EmailListQuery, ListQuery } from '../schemas.js';
import { validator } from '../validate.js';
import { limitOf, principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkSend = validator(SendEmail);
const checkBatch = validator(SendBatch);
const checkList = validator(EmailListQuery);
const checkPage = validator(ListQuery);

export function emailRoutes(r: Router, { app, auth }: Deps) {
  r.post('/emails', auth('emails:send'), async (ctx: KoaCtx) => {
    const idem = ctx.get('Idempotency-Key') || undefined;
    const res = await submitEmail(app, principal(ctx), checkSend(ctx.request.body), idem);
    ctx.status = res.status;
    if (res.replayed) ctx.set('Idempotent-Replayed', 'true');
    ctx.body = res.body;
  });
  const arrayBody = (ctx: KoaCtx, next: Koa.Next) => {
    ctx.state.arrayBody = true;
    return next();
  };
  r.post('/emails/batch', arrayBody, auth('emails:send'), async (ctx: KoaCtx) => {
    const items = checkBatch(ctx.request.body).map((item, i) => forItem(i, () => checkSend(item)));
    const res = await submitBatch(app, principal(ctx), items, ctx.get('Idempotency-Key') || undefined);
    ctx.status = res.status;
    if (res.replayed) ctx.set('Idempotent-Replayed', 'true');
    ctx.body = res.body;
  });
  r.get('/emails', auth('emails:read'), async (ctx: KoaCtx) => {
    const q = checkList(ctx.query);
    const filter = {
      status: q.status,
      testMode: q.test_mode === undefined ? undefined : q.test_mode === 'true',
      tag: q.tag,
      q: q.q,
    };
    ctx.body = await listEmails(app, principal(ctx), filter, limitOf(q.limit), q.cursor);
  });
  r.get('/emails/:id', auth('emails:read'), async (ctx: KoaCtx) => {
    ctx.body = presentEmail(await getEmail(app, principal(ctx), ctx.params.id));
  });
  r.get('/emails/:id/events', auth('emails:read'), async (ctx: KoaCtx) => {
    const q = checkPage(ctx.query);
    ctx.body = await listEvents(app, principal(ctx), ctx.params.id, limitOf(q.limit), q.cursor);
  });
  r.post('/emails/:id/cancel', auth('emails:send'), async (ctx: KoaCtx) => {
    ctx.body = await cancelEmail(app, principal(ctx), ctx.params.id);
  });
}
