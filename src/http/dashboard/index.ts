// The /dashboard mount: security headers, HTML error pages, form bodies, the session gate and the
// CSRF check on every POST, the static assets, then the page routes (auth, emails, received mail, domains, webhooks, account, overview, delivery).
import Router from '@koa/router';
import bodyParser from 'koa-bodyparser';
import type Koa from 'koa';
import { ApiError } from '../../core/errors.js';
import type { Deps } from '../app.js';
import { clientFault, type State } from '../middleware.js';
import { CSS, JS } from './assets.js';
import { html } from './html.js';
import { layout } from './layout.js';
import { loadSession, readCookie, sameSecret, SESSION_COOKIE, LOGIN_CSRF_COOKIE } from './session.js';
import { render, teamNameOf, type DCtx, type DashState, type DRouter } from './kit.js';
import { authRoutes } from './pages/auth.js';
import { emailPages } from './pages/emails.js';
import { domainPages } from './pages/domains.js';
import { webhookPages } from './pages/webhooks.js';
import { inboundPages } from './pages/inbound.js';
import { accountPages } from './pages/account.js';
import { overviewPages } from './pages/overview.js';
import { deliveryPages } from './pages/delivery.js';
import { queuePages } from './pages/queue.js';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";
const PUBLIC = new Set(['/dashboard/sign-in', '/dashboard/assets/app.css', '/dashboard/assets/app.js']);

function headers(k: DCtx) {
  k.set('Content-Security-Policy', CSP);
  k.set('X-Content-Type-Options', 'nosniff');
  k.set('X-Frame-Options', 'DENY');
  k.set('Referrer-Policy', 'same-origin');
  k.set('Cache-Control', 'no-store');
}

function errorPages(deps: Deps) {
  return async (k: DCtx, next: Koa.Next) => {
    try {
      await next();
      if (k.status === 404 && k.body === undefined)
        throw new ApiError('not_found', 'page_not_found', 'There is no such page.');
    } catch (err) {
      const e = err instanceof ApiError ? err : null;
      const status = e ? e.status : (clientFault(err) ?? 500);
      if (!e && status === 500) deps.app.log.error({ err, requestId: k.state.requestId }, 'dashboard error');
      const message = e
        ? e.message
        : status === 413
          ? 'The form is too large.'
          : status < 500
            ? 'The form could not be read.'
            : 'Something went wrong on our side; try again.';
      const title =
        status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : status === 500 ? 'Error' : 'Cannot do that';
      const body = html`<h1>${title}</h1>
        <p class="error" role="alert">${message}</p>
        <p><a href="/dashboard">Back to the dashboard</a></p>`;
      const session = k.state.session;
      render(k, layout({ title, session, teamName: teamNameOf(session), body, active: '' }), status);
    }
  };
}

/** Loads the session; sends visitors without one to sign-in (pages) or answers 401 (JSON/fragment polls). */
function gate(deps: Deps) {
  return async (k: DCtx, next: Koa.Next) => {
    k.state.session = (await loadSession(deps.app, readCookie(k, SESSION_COOKIE))) ?? undefined;
    if (PUBLIC.has(k.path) || k.state.session) return next();
    if (k.method === 'GET' && !k.path.endsWith('/statuses') && !k.path.endsWith('/timeline')) {
      const nextUrl =
        k.path === '/dashboard' || k.path === '/dashboard/' ? '' : `?next=${encodeURIComponent(k.originalUrl)}`;
      k.status = 303;
      return k.redirect(`/dashboard/sign-in${nextUrl}`);
    }
    if (k.method === 'POST') {
      k.status = 303;
      return k.redirect('/dashboard/sign-in?notice=session_ended');
    }
    k.status = 401;
    k.body = { error: 'signed_out' };
  };
}

/**
 * Every POST carries the session's CSRF token (or, for sign-in, the login cookie's) and, if any, an Origin
 * on this host or the public URL's origin (a reverse proxy may rewrite Host).
 */
function csrf(deps: Deps) {
  const publicOrigin = new URL(deps.app.config.publicUrl).origin;
  return async (k: DCtx, next: Koa.Next) => {
    if (k.method !== 'POST') return next();
    const origin = k.get('Origin');
    if (origin && origin !== 'null' && origin !== publicOrigin) {
      let host: string;
      try {
        host = new URL(origin).host;
      } catch {
        host = '';
      }
      if (host !== k.host)
        throw new ApiError('permission_error', 'csrf_failed', 'This form was sent from another site.');
    }
    const sent = (k.request as { body?: Record<string, unknown> }).body?._csrf;
    const want = k.path === '/dashboard/sign-in' ? readCookie(k, LOGIN_CSRF_COOKIE) : k.state.session?.csrf;
    if (typeof sent !== 'string' || !want || !sameSecret(sent, want)) {
      throw new ApiError(
        'permission_error',
        'csrf_failed',
        'The form expired or was not sent from this dashboard. Reload the page and try again.',
      );
    }
    await next();
  };
}

export function dashboardMount(koa: Koa<State>, deps: Deps) {
  const r: DRouter = new Router<DashState>({ prefix: '/dashboard' });
  r.use(async (k: DCtx, next) => {
    headers(k);
    await next();
  });
  r.use(errorPages(deps));
  // The session gate first: a form posted without a session is turned away unread (only the public pages, the
  // sign-in form, have their body parsed without one).
  r.use(gate(deps));
  r.use(bodyParser({ enableTypes: ['form'], formLimit: '64kb' }));
  r.use(csrf(deps));
  r.get('/assets/app.css', (k: DCtx) => {
    k.type = 'text/css; charset=utf-8';
    k.set('Cache-Control', 'public, max-age=300');
    k.body = CSS;
  });
  r.get('/assets/app.js', (k: DCtx) => {
    k.type = 'text/javascript; charset=utf-8';
    k.set('Cache-Control', 'public, max-age=300');
    k.body = JS;
  });
  authRoutes(r, deps);
  emailPages(r, deps);
  domainPages(r, deps);
  webhookPages(r, deps);
  inboundPages(r, deps);
  accountPages(r, deps);
  overviewPages(r, deps);
  deliveryPages(r, deps);
  queuePages(r, deps);
  r.all('/{*rest}', () => {
    throw new ApiError('not_found', 'page_not_found', 'There is no such page.');
  });
  koa.use(r.routes() as unknown as Koa.Middleware<State>);
}
