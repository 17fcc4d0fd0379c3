// Page chrome and small view helpers shared by the dashboard pages: layout with landmarks and a skip
// link, navigation, status badges, the test tag, times, CSRF fields, pagers and notices. All via `html`.
import { html, query, type Html, type Value } from './html.js';
import type { Session } from './session.js';
import type { Scope } from '../../services/keys.js';

export interface PageOpts {
  title: string;
  session?: Session | null;
  teamName?: string;
  active?: string;
  body: Html;
  notice?: string | null;
  error?: string | null;
}

/** Pages in the main navigation; a third `true` shows the entry to operator sessions only. */
const NAV: [string, string, boolean?][] = [
  ['overview', 'Overview'],
  ['emails', 'Emails'],
  ['received', 'Received'],
  ['domains', 'Domains'],
  ['webhooks', 'Webhooks'],
  ['suppressions', 'Suppressions'],
  ['keys', 'API keys'],
  ['credits', 'Credits'],
  ['delivery', 'Delivery', true],
  ['queue', 'Queue'],
];

export const can = (s: Session, scope: Scope) => s.principal.scopes.has(scope);

export const csrfField = (s: Session | { csrf: string }) =>
  html`<input type="hidden" name="_csrf" value="${s.csrf}" />`;

function who(s: Session, teamName?: string): Html {
  const as = s.operator ? 'operator' : `${s.principal.mode} key`;
  return html`<span class="who">${teamName ? html`Team <strong>${teamName}</strong> · ` : ''}signed in as ${as}</span>
    <form class="inline" method="post" action="/dashboard/sign-out">
      ${csrfField(s)}<button class="secondary" type="submit">Sign out</button>
    </form>`;
}

export function layout(o: PageOpts): Html {
  const s = o.session;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${o.title} · MTA dashboard</title>
        <link rel="stylesheet" href="/dashboard/assets/app.css" />
      </head>
      <body>
        <a class="skip" href="#content">Skip to main content</a>
        <header class="top">
          <a class="brand" href="/dashboard">MTA dashboard</a>
          ${
            s
              ? html`<nav class="main" aria-label="Main">
                    <ul>
                      ${NAV.filter((n) => !n[2] || s.operator).map(([k, label]) => html`<li><a href="/dashboard/${k}" ${o.active === k ? html` aria-current="page"` : ''}>${label}</a></li>`)}
                    </ul>
                  </nav>
                  ${who(s, o.teamName)}`
              : ''
          }
        </header>
        <main id="content" tabindex="-1">
          ${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''}
          ${o.error ? html`<p class="error" role="alert">${o.error}</p>` : ''} ${o.body}
        </main>
        <script src="/dashboard/assets/app.js" defer></script>
      </body>
    </html>`;
}

export const badge = (status: string) => html`<span class="badge s-${status}" data-status="${status}">${status}</span>`;
export const testTag = () =>
  html`<span class="tag-test" title="Sent with a test key: never delivered, never charged">test</span>`;

/** `<time>` in UTC, readable on a phone. */
export function time(isoStr: string | null | undefined): Html {
  if (!isoStr) return html`<span class="muted">—</span>`;
  return html`<time datetime="${isoStr}"
    >${isoStr
      .replace('T', ' ')
      .replace(/\.\d+Z$/, ' UTC')
      .replace(/Z$/, ' UTC')}</time
  >`;
}

export const chips = (xs: readonly string[] | null | undefined) =>
  (xs ?? []).map((x) => html`<span class="chip">${x}</span>`);

export function pager(
  base: string,
  params: Record<string, string | undefined>,
  next: string | null,
  hasCursor: boolean,
): Html {
  if (!next && !hasCursor) return html``;
  return html`<nav class="pager" aria-label="Pages">
    ${hasCursor ? html`<a href="${base}${query({ ...params, cursor: undefined })}">First page</a>` : ''}
    ${next ? html`<a href="${base}${query({ ...params, cursor: next })}" rel="next">Next page</a>` : ''}
  </nav>`;
}

export function readOnly(scope: string, what: string): Html {
  return html`<p class="note">
    Read-only: the key behind this session lacks the <code>${scope}</code> scope, so you cannot ${what} here.
  </p>`;
}

/** A wide table that scrolls on small screens, reachable by keyboard. */
export function tableWrap(label: string, table: Value): Html {
  return html`<div class="table-wrap" role="region" aria-label="${label}" tabindex="0">${table}</div>`;
}

/** Fixed notices named in a redirect's `notice` query parameter (never reflected user text). */
const NOTICES: Record<string, string> = {
  suppression_removed: 'The address was removed from the suppression list.',
  suppression_added: 'The address was added to the suppression list.',
  key_revoked: 'The API key was revoked.',
  email_canceled: 'The email was canceled and its credits refunded.',
  domain_checked: 'The domain records were checked again.',
  domain_added: 'The domain was added. Publish the records below.',
  signed_out: 'You are signed out.',
  session_ended: 'Your session ended (signed out, expired, or its key was revoked). Sign in again.',
};
export const noticeText = (code: unknown) => (typeof code === 'string' ? (NOTICES[code] ?? null) : null);
