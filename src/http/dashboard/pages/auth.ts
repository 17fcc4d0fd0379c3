// Sign-in with an API key (needs emails:read; the session acts as that key; the API's back-off per client address)
// or, when configured, the operator password plus a team (back-off, logged failures); sign-out. CSRF: a
// double-submit cookie.
import { ApiError } from '../../../core/errors.js';
import { authenticate, teamNamed } from '../../../services/keys.js';
import type { Deps } from '../../app.js';
import { html, type Html } from '../html.js';
import { layout, noticeText } from '../layout.js';
import {
  createSession,
  endSession,
  sameSecret,
  setCookie,
  clearCookie,
  token,
  SESSION_COOKIE,
  LOGIN_CSRF_COOKIE,
  SESSION_TTL_MS,
} from '../session.js';
import { field, qs, render, seeOther, sess, type DCtx, type DRouter } from '../kit.js';
import { trustedProxyList } from '../../../config/proxies.js';
import { MIN_DASHBOARD_PASSWORD as MIN_PASSWORD } from '../../../config/schema.js';
import { clientAddress } from '../client-ip.js';
import { signInGuard } from '../sign-in-guard.js';
import { addressBucket, limit } from '../../middleware.js';
import { keyLimiter } from '../../../services/rate-limits.js';

/** Only same-dashboard paths are allowed as the post-sign-in target. */
const safeNext = (n: string | undefined) =>
  n && /^\/dashboard(\/[\w\-./?=&%]*)?$/.test(n) && !n.includes('//') ? n : '/dashboard/emails';

function signInPage(k: DCtx, deps: Deps, csrf: string, error: string | null, status = 200) {
  const next = qs(k, 'next') ?? field(k, 'next');
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}" /><input
      type="hidden"
      name="next"
      value="${safeNext(next)}"
    />`;
  const operator: Html | string = deps.app.config.dashboardPassword
    ? html` <section class="card" aria-labelledby="op-h">
        <h2 id="op-h">Operator sign-in</h2>
        <form method="post" action="/dashboard/sign-in">
          ${hidden}
          <p>
            <label for="password">Operator password</label
            ><input id="password" name="password" type="password" autocomplete="current-password" required />
          </p>
          <p>
            <label for="team">Team (name or id)</label
            ><input id="team" name="team" type="text" autocomplete="off" required />
          </p>
          <p><button type="submit">Sign in as operator</button></p>
        </form>
      </section>`
    : '';
  const body = html`<div class="signin">
    <h1>Sign in</h1>
    <section class="card" aria-labelledby="key-h">
      <h2 id="key-h">With an API key</h2>
      <form method="post" action="/dashboard/sign-in">
        ${hidden}
        <p>
          <label for="key">API key</label
          ><input
            id="key"
            name="key"
            type="password"
            autocomplete="off"
            spellcheck="false"
            required
            aria-describedby="key-help"
          />
        </p>
        <p id="key-help" class="muted">
          A test or live key of your team with the <code>emails:read</code> scope. The dashboard acts with that key's
          scopes.
        </p>
        <p><button type="submit">Sign in</button></p>
      </form>
    </section>
    ${operator}
  </div>`;
  render(k, layout({ title: 'Sign in', body, error, notice: noticeText(k.query.notice) }), status);
}

function freshLoginCsrf(deps: Deps, k: DCtx): string {
  const t = token();
  setCookie(deps.app, k, LOGIN_CSRF_COOKIE, t, 3600);
  return t;
}

async function startSession(deps: Deps, k: DCtx, s: { teamId: string; keyId: string | null; operator: boolean }) {
  const id = await createSession(deps.app, s);
  setCookie(deps.app, k, SESSION_COOKIE, id, SESSION_TTL_MS / 1000);
  clearCookie(deps.app, k, LOGIN_CSRF_COOKIE);
  seeOther(k, safeNext(field(k, 'next')));
}

/** The client address of a sign-in: X-Forwarded-For counts only from MTA_TRUSTED_PROXIES (default none). */
function addressOf(deps: Deps): (k: DCtx) => string {
  const trusted = deps.app.config.trustedProxies?.length ? trustedProxyList(deps.app.config.trustedProxies) : null;
  return (k) => clientAddress(k.req.socket.remoteAddress ?? '', k.get('X-Forwarded-For') || undefined, trusted);
}

/**
 * Key sign-in. Before the key is checked, the attempt takes a token from its client address's bucket of the API's
 * rate limiter, the one the API's requests with a wrong key take from (middleware addressBucket): an address that
 * spent it, on either surface, is refused (429, Retry-After), a right key too, until it refills (MTA_RATE_LIMIT).
 */
function keySignIn(deps: Deps) {
  const limiter = keyLimiter(deps.app);
  const address = addressOf(deps);
  return async (k: DCtx, key: string) => {
    try {
      if (limiter) limit(k, limiter, addressBucket(address(k)), 'client address signing in with a key');
    } catch (err) {
      if (!(err instanceof ApiError) || err.type !== 'rate_limit_error') throw err;
      const wait = k.state.retryAfter ?? 1;
      k.set('Retry-After', String(wait));
      const message = `Too many sign-in attempts from your address; try again in ${wait} seconds.`;
      return signInPage(k, deps, freshLoginCsrf(deps, k), message, 429);
    }
    await signInWithKey(deps, k, key);
  };
}

async function signInWithKey(deps: Deps, k: DCtx, key: string) {
  try {
    const p = await authenticate(deps.app, `Bearer ${key}`);
    if (!p.scopes.has('emails:read'))
      return signInPage(
        k,
        deps,
        freshLoginCsrf(deps, k),
        'This key lacks the emails:read scope, which the dashboard needs.',
        403,
      );
    await startSession(deps, k, { teamId: p.teamId, keyId: p.keyId, operator: false });
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    signInPage(k, deps, freshLoginCsrf(deps, k), 'That API key is unknown or revoked.', 401);
  }
}

/** Operator sign-in: the back-off (per address and global) runs before the password is compared; every failure is logged. */
function operatorSignIn(deps: Deps) {
  const guard = signInGuard(deps.app);
  const addressOfRequest = addressOf(deps);
  const log = deps.app.log.child({ component: 'dashboard' });
  return async (k: DCtx) => {
    const address = addressOfRequest(k);
    const want = deps.app.config.dashboardPassword;
    const refused = guard.refusal(address);
    if (refused) {
      log.warn(
        { address, reason: `locked (${refused.scope})`, retryAfterSec: refused.retryAfterSec },
        'dashboard operator sign-in refused',
      );
      k.set('Retry-After', String(refused.retryAfterSec));
      const wait =
        refused.scope === 'global'
          ? 'Operator sign-in is paused after many wrong passwords'
          : 'Too many wrong passwords from your address';
      return signInPage(
        k,
        deps,
        freshLoginCsrf(deps, k),
        `${wait}; try again in ${refused.retryAfterSec} seconds.`,
        429,
      );
    }
    if ([...want].length < MIN_PASSWORD) {
      log.error(
        { address },
        `dashboard operator sign-in refused: MTA_DASHBOARD_PASSWORD is empty or shorter than ${MIN_PASSWORD} characters`,
      );
      return signInPage(k, deps, freshLoginCsrf(deps, k), 'Operator sign-in is not available.', 401);
    }
    if (!sameSecret(field(k, 'password'), want)) {
      const lockMs = guard.failed(address);
      log.warn({ address, reason: 'wrong password' }, 'dashboard operator sign-in failed');
      if (lockMs !== null)
        log.warn(
          { lockSeconds: lockMs / 1000 },
          'dashboard operator sign-in paused for every address: too many wrong passwords',
        );
      return signInPage(k, deps, freshLoginCsrf(deps, k), 'Wrong operator password.', 401);
    }
    let teamId: string;
    try {
      teamId = (await teamNamed(deps.app, field(k, 'team'))).id;
    } catch {
      return signInPage(k, deps, freshLoginCsrf(deps, k), 'No team has that name or id.', 422);
    }
    log.info({ team: teamId, address }, 'dashboard operator sign-in');
    await startSession(deps, k, { teamId, keyId: null, operator: true });
  };
}

export function authRoutes(r: DRouter, deps: Deps) {
  const signInAsOperator = operatorSignIn(deps);
  const signInWithAKey = keySignIn(deps);
  r.get('/', (k: DCtx) => seeOther(k, '/dashboard/emails'));
  r.get('/sign-in', (k: DCtx) => {
    if (k.state.session) return seeOther(k, safeNext(qs(k, 'next')));
    signInPage(k, deps, freshLoginCsrf(deps, k), null);
  });
  r.post('/sign-in', (k: DCtx) => {
    const key = field(k, 'key');
    if (key) return signInWithAKey(k, key);
    if (field(k, 'password')) return signInAsOperator(k);
    signInPage(k, deps, freshLoginCsrf(deps, k), 'Type an API key to sign in.', 422);
  });
  r.post('/sign-out', async (k: DCtx) => {
    await endSession(deps.app, sess(k).idHash);
    clearCookie(deps.app, k, SESSION_COOKIE);
    seeOther(k, '/dashboard/sign-in?notice=signed_out');
  });
}
