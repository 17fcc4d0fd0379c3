// /v1/emails: send, list, fetch, events, cancel.
import type Router from '@koa/router';
import { submitEmail, getEmail, listEmails, listEvents, cancelEmail } from '../../services/emails.js';
import { presentEmail } from '../../services/present.js';
import { SendEmail, EmailListQuery, ListQuery } from '../schemas.js';
import { validator } from '../validate.js';
import { limitOf, principal, type KoaCtx } from '../middleware.js';
import type { Deps } from '../app.js';

const checkSend = validator(SendEmail);
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
  r.get('/emails', auth('emails:read'), (ctx: KoaCtx) => {
    const q = checkList(ctx.query);
    const filter = {
      status: q.status,
      testMode: q.test_mode === undefined ? undefined : q.test_mode === 'true',
      tag: q.tag,
      q: q.q,
    };
    ctx.body = listEmails(app, principal(ctx), filter, limitOf(q.limit), q.cursor);
  });
  r.get('/emails/:id', auth('emails:read'), (ctx: KoaCtx) => {
    ctx.body = presentEmail(getEmail(app, principal(ctx), ctx.params.id));
  });
  r.get('/emails/:id/events', auth('emails:read'), (ctx: KoaCtx) => {
    const q = checkPage(ctx.query);
    ctx.body = listEvents(app, principal(ctx), ctx.params.id, limitOf(q.limit), q.cursor);
  });
  r.post('/emails/:id/cancel', auth('emails:send'), (ctx: KoaCtx) => {
    ctx.body = cancelEmail(app, principal(ctx), ctx.params.id);
  });
}
