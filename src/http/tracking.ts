// Public tracking routes (no API key): GET /t/o/<token>.gif answers a 1×1 GIF and records the first
// open; GET /t/c/<token> records a click and redirects to the URL the email held. Bad tokens are 404.
import Router from '@koa/router';
import type Koa from 'koa';
import { notFound } from '../core/errors.js';
import { readToken, recordClick, recordOpen } from '../services/tracking.js';
import type { State, KoaCtx } from './middleware.js';
import type { Deps } from './app.js';

const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

export function trackingMount(koa: Koa<State>, { app }: Deps) {
  const r = new Router<State>();
  r.get('/t/o/:file', async (ctx: KoaCtx) => {
    const m = /^(.+)\.gif$/.exec(ctx.params.file);
    const ok = m !== null && (ctx.method === 'HEAD' ? readToken(app, 'o', m[1]) !== null : await recordOpen(app, m[1]));
    if (!ok) throw notFound('tracking_link');
    ctx.set('Cache-Control', 'no-store, max-age=0');
    ctx.type = 'image/gif';
    ctx.body = GIF;
  });
  r.get('/t/c/:token', async (ctx: KoaCtx) => {
    // HEAD (link scanners) redirects without counting a click.
    const url = await recordClick(app, ctx.params.token, ctx.method !== 'HEAD');
    if (url === null) throw notFound('tracking_link');
    ctx.set('Cache-Control', 'no-store, max-age=0');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.status = 302;
    ctx.redirect(url);
  });
  koa.use(r.routes());
}
