// Account pages: the suppression list (add, remove: emails:send), API keys (create with the full key
// shown once, revoke: keys:write; revoking ends that key's sessions) and the credit balance.
import { addSuppression, listSuppressions, removeSuppression } from '../../../services/suppressions.js';
import { createKeyAs, listKeys, requireScope, revokeKey, DEFAULT_SCOPES, SCOPES } from '../../../services/keys.js';
import { balance } from '../../../services/credits.js';
import { presentKey } from '../../../services/present.js';
import type { Deps } from '../../app.js';
import { html, type Html } from '../html.js';
import { badge, can, chips, csrfField, pager, readOnly, tableWrap, time } from '../layout.js';
import { clearCookie, endKeySessions, SESSION_COOKIE } from '../session.js';
import { field, fields, page, qs, seeOther, sess, type DCtx, type DRouter } from '../kit.js';

async function suppressionsPage(deps: Deps, k: DCtx) {
  const s = sess(k);
  const cursor = qs(k, 'cursor');
  const list = await listSuppressions(deps.app, s.principal.teamId, 50, cursor);
  const write = can(s, 'emails:send');
  const form = write
    ? html`<form class="filters" method="post" action="/dashboard/suppressions">
        ${csrfField(s)}
        <div>
          <label for="s-addr">Address to suppress</label
          ><input id="s-addr" name="address" type="email" required autocomplete="off" />
        </div>
        <div><button type="submit">Suppress</button></div>
      </form>`
    : readOnly('emails:send', 'add or remove suppressed addresses');
  const table =
    list.data.length === 0
      ? html`<p class="card">No suppressed addresses.</p>`
      : tableWrap(
          'Suppressed addresses',
          html`<table class="stack">
            <caption>
              Suppressed addresses: live email to them is dropped and not charged
            </caption>
            <thead>
              <tr>
                <th scope="col">Address</th>
                <th scope="col">Reason</th>
                <th scope="col">Email</th>
                <th scope="col">Since</th>
                ${write ? html`<th scope="col">Action</th>` : ''}
              </tr>
            </thead>
            <tbody>
              ${list.data.map(
                (x) =>
                  html`<tr>
                    <td data-label="Address">${x.address}</td>
                    <td data-label="Reason">${x.reason}</td>
                    <td data-label="Email">
                      ${x.email_id ? html`<a href="/dashboard/emails/${x.email_id}"><code>${x.email_id}</code></a>` : html`<span class="muted">—</span>`}
                    </td>
                    <td data-label="Since">${time(x.created_at)}</td>
                    ${
                      write
                        ? html`<td>
                            <form class="inline" method="post" action="/dashboard/suppressions/remove">
                              ${csrfField(s)}<input type="hidden" name="address" value="${x.address}" />
                              <button
                                class="danger"
                                type="submit"
                                aria-label="Remove ${x.address} from the suppression list"
                              >
                                Remove
                              </button>
                            </form>
                          </td>`
                        : ''
                    }
                  </tr>`,
              )}
            </tbody>
          </table>`,
        );
  const body = html`<h1>Suppression list</h1>
    ${form}${table}${pager('/dashboard/suppressions', {}, list.next_cursor, cursor !== undefined)}`;
  page(deps.app, k, { title: 'Suppressions', active: 'suppressions', body });
}

function createForm(k: DCtx): Html {
  const s = sess(k);
  return html`<section class="card" aria-labelledby="new-key-h">
    <h2 id="new-key-h">Create a key</h2>
    <form method="post" action="/dashboard/keys">
      ${csrfField(s)}
      <p>
        <label for="k-name">Name</label><input id="k-name" name="name" type="text" maxlength="200" autocomplete="off" />
      </p>
      <fieldset>
        <legend>Mode</legend>
        <label><input type="radio" name="mode" value="test" checked /> test</label
        >${s.principal.mode === 'live' ? html`<label><input type="radio" name="mode" value="live" /> live</label>` : ''}
      </fieldset>
      <fieldset>
        <legend>Scopes</legend>
        ${SCOPES.map((sc) => html`<label><input type="checkbox" name="scopes" value="${sc}" ${DEFAULT_SCOPES.includes(sc) ? html` checked` : ''} /> ${sc}</label>`)}
      </fieldset>
      <p><button type="submit">Create key</button></p>
    </form>
  </section>`;
}

async function keysPage(deps: Deps, k: DCtx, created?: { key: string; name: string | null }) {
  const s = sess(k);
  const write = can(s, 'keys:write');
  if (!write) {
    // GET /v1/api-keys needs keys:write too: without it, not even the list
    return page(deps.app, k, {
      title: 'API keys',
      active: 'keys',
      body: html`<h1>API keys</h1>
        ${readOnly('keys:write', 'see, create or revoke keys')}`,
    });
  }
  const keys = (await listKeys(deps.app, s.principal)).map((r) => presentKey(r));
  const shown = created
    ? html`<section class="notice" role="status" aria-labelledby="shown-h">
        <h2 id="shown-h">New key${created.name ? ` “${created.name}”` : ''}</h2>
        <p>
          <label for="full-key">Copy this key now: it is shown only once.</label
          ><input id="full-key" class="secret" type="text" readonly value="${created.key}" />
        </p>
      </section>`
    : '';
  const table = tableWrap(
    'API keys',
    html`<table class="stack">
      <caption>
        API keys of the team (only their prefixes are stored in clear)
      </caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Prefix</th>
          <th scope="col">Mode</th>
          <th scope="col">Scopes</th>
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">State</th>
          ${write ? html`<th scope="col">Action</th>` : ''}
        </tr>
      </thead>
      <tbody>
        ${keys.map(
          (x) =>
            html`<tr>
              <td data-label="Name">
                ${x.name ?? html`<span class="muted">(unnamed)</span>`}${x.id === s.principal.keyId ? html` <strong>(this session)</strong>` : ''}
              </td>
              <td data-label="Prefix"><code>${x.prefix}…</code></td>
              <td data-label="Mode">${x.mode}</td>
              <td data-label="Scopes">${chips(x.scopes)}</td>
              <td data-label="Created">${time(x.created_at)}</td>
              <td data-label="Last used">${time(x.last_used_at)}</td>
              <td data-label="State">
                ${x.revoked_at ? html`${badge('revoked')} ${time(x.revoked_at)}` : badge('active')}
              </td>
              ${
                write
                  ? html`<td>
                      ${
                        x.revoked_at
                          ? ''
                          : html`<form class="inline" method="post" action="/dashboard/keys/${x.id}/revoke">
                              ${csrfField(s)}
                              <button class="danger" type="submit" aria-label="Revoke key ${x.name ?? x.prefix}">
                                Revoke
                              </button>
                            </form>`
                      }
                    </td>`
                  : ''
              }
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
  const none = html`<p class="card muted">
    No API keys yet: the team cannot send until one is created
    ${write ? html`with the form above` : html`(<code>mta key create --team NAME</code>)`}.
  </p>`;
  const body = html`<h1>API keys</h1>
    ${shown}${write ? createForm(k) : readOnly('keys:write', 'create or revoke keys')}${keys.length ? table : none}`;
  page(deps.app, k, { title: 'API keys', active: 'keys', body }, created ? 201 : 200);
}

async function creditsPage(deps: Deps, k: DCtx) {
  const b = await balance(deps.app, sess(k).principal.teamId);
  const grants =
    b.grants.length === 0
      ? html`<p class="muted">No bought credits.</p>`
      : tableWrap(
          'Credit grants',
          html`<table class="stack">
            <caption>
              Bought credits, spent oldest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Grant</th>
                <th scope="col">Amount</th>
                <th scope="col">Remaining</th>
                <th scope="col">Expires</th>
              </tr>
            </thead>
            <tbody>
              ${b.grants.map(
                (g) =>
                  html`<tr>
                    <td data-label="Grant"><code>${g.id}</code></td>
                    <td data-label="Amount">${g.amount}</td>
                    <td data-label="Remaining">${g.remaining}</td>
                    <td data-label="Expires">${time(g.expires_at)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`,
        );
  const body = html`<h1>Credits</h1>
    <section class="card" aria-label="Balance">
      <dl class="facts">
        <dt>Available</dt>
        <dd><strong id="credits-available">${b.available}</strong> recipients</dd>
        <dt>Free this month</dt>
        <dd>${b.free_remaining}</dd>
        <dt>Bought, remaining</dt>
        <dd>${b.purchased_remaining}</dd>
      </dl>
      <p class="muted">One credit per live recipient; test email is free.</p>
    </section>
    ${grants}`;
  page(deps.app, k, { title: 'Credits', active: 'credits', body });
}

export function accountPages(r: DRouter, deps: Deps) {
  r.get('/suppressions', (k: DCtx) => suppressionsPage(deps, k));
  r.post('/suppressions', async (k: DCtx) => {
    requireScope(sess(k).principal, 'emails:send');
    await addSuppression(deps.app, sess(k).principal, field(k, 'address'), 'manual');
    seeOther(k, '/dashboard/suppressions?notice=suppression_added');
  });
  r.post('/suppressions/remove', async (k: DCtx) => {
    requireScope(sess(k).principal, 'emails:send');
    await removeSuppression(deps.app, sess(k).principal, field(k, 'address'));
    seeOther(k, '/dashboard/suppressions?notice=suppression_removed');
  });
  r.get('/keys', (k: DCtx) => keysPage(deps, k));
  r.post('/keys', async (k: DCtx) => {
    requireScope(sess(k).principal, 'keys:write');
    const mode = field(k, 'mode') === 'live' ? 'live' : 'test';
    const { row, key } = await createKeyAs(deps.app, sess(k).principal, {
      mode,
      scopes: fields(k, 'scopes'),
      name: field(k, 'name') || null,
    });
    await keysPage(deps, k, { key, name: row.name });
  });
  r.post('/keys/:id/revoke', async (k: DCtx) => {
    requireScope(sess(k).principal, 'keys:write');
    const s = sess(k);
    const row = await revokeKey(deps.app, k.params.id, s.principal);
    await endKeySessions(deps.app, row.id);
    if (row.id === s.principal.keyId) {
      clearCookie(deps.app, k, SESSION_COOKIE);
      return seeOther(k, '/dashboard/sign-in?notice=session_ended');
    }
    seeOther(k, '/dashboard/keys?notice=key_revoked');
  });
  r.get('/credits', (k: DCtx) => creditsPage(deps, k));
}
