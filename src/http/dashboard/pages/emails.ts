// Email pages: the list (newest first; filters status, test_mode, tag, q as in the API; cursor pages),
// one email with each recipient's timeline of delivery events, cancel, and the live-refresh endpoints.
import { STATUSES, FINAL, type Status } from '../../../core/status.js';
import { invalid } from '../../../core/errors.js';
import { getEmail, listEmails, listEvents, cancelEmail } from '../../../services/emails.js';
import { presentEmail, type Email } from '../../../services/present.js';
import type { EmailFilter } from '../../../services/emails.js';
import { requireScope, type Owner } from '../../../services/keys.js';
import type { Deps } from '../../app.js';
import { html, query, type Html } from '../html.js';
import { badge, can, chips, csrfField, pager, tableWrap, testTag, time } from '../layout.js';
import { page, qs, render, seeOther, sess, type DCtx, type DRouter } from '../kit.js';
import { timeline, type Ev } from './timeline.js';

const PAGE_SIZE = 25;

function filtersOf(k: DCtx): { f: EmailFilter; params: Record<string, string | undefined> } {
  const status = qs(k, 'status');
  const mode = qs(k, 'test_mode');
  const tag = qs(k, 'tag');
  const q = qs(k, 'q');
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status))
    throw invalid('status', `Unknown status filter; use one of ${STATUSES.join(', ')}.`);
  if (mode !== undefined && mode !== 'true' && mode !== 'false')
    throw invalid('test_mode', 'The mode filter is "true" (test) or "false" (live).');
  if (tag !== undefined && tag.length > 256) throw invalid('tag', 'A tag has at most 256 characters.');
  if (q !== undefined && q.length > 320) throw invalid('q', 'The search text has at most 320 characters.');
  return {
    f: { status: status as Status | undefined, testMode: mode === undefined ? undefined : mode === 'true', tag, q },
    params: { status, test_mode: mode, tag, q },
  };
}

const sel = (cur: string | undefined, v: string) => (cur === v ? html` selected` : '');

function filterForm(p: Record<string, string | undefined>, testSession: boolean): Html {
  return html`<form class="filters" method="get" action="/dashboard/emails" role="search" aria-label="Filter emails">
    <div>
      <label for="f-status">Status</label
      ><select id="f-status" name="status">
        <option value="">Any status</option>
        ${STATUSES.map((s) => html`<option value="${s}" ${sel(p.status, s)}>${s}</option>`)}
      </select>
    </div>
    ${
      testSession
        ? ''
        : html`<div>
            <label for="f-mode">Mode</label
            ><select id="f-mode" name="test_mode">
              <option value="">Live and test</option>
              <option value="false" ${sel(p.test_mode, 'false')}>Live only</option>
              <option value="true" ${sel(p.test_mode, 'true')}>Test only</option>
            </select>
          </div>`
    }
    <div>
      <label for="f-tag">Tag</label><input id="f-tag" name="tag" type="text" value="${p.tag ?? ''}" maxlength="256" />
    </div>
    <div>
      <label for="f-q">Recipient or subject</label
      ><input id="f-q" name="q" type="search" value="${p.q ?? ''}" maxlength="320" />
    </div>
    <div><button type="submit">Filter</button> <a href="/dashboard/emails">Clear</a></div>
  </form>`;
}

function row(e: Email): Html {
  const to = [...e.to, ...(e.cc ?? []), ...(e.bcc ?? [])];
  return html`<tr data-email-id="${e.id}">
    <td data-label="Status">${badge(e.status)}</td>
    <td data-label="Subject"><a href="/dashboard/emails/${e.id}">${e.subject || '(no subject)'}</a></td>
    <td data-label="To">${to.slice(0, 3).join(', ')}${to.length > 3 ? ` and ${to.length - 3} more` : ''}</td>
    <td data-label="Sent">${time(e.created_at)}</td>
    <td data-label="Mode">${e.test_mode ? testTag() : html`<span class="muted">live</span>`} ${chips(e.tags)}</td>
  </tr>`;
}

async function listPage(deps: Deps, k: DCtx) {
  const { f, params } = filtersOf(k);
  const cursor = qs(k, 'cursor');
  const list = await listEmails(deps.app, sess(k).principal, f, PAGE_SIZE, cursor);
  const filtered = Object.values(params).some((v) => v !== undefined);
  const table =
    list.data.length === 0
      ? html`<p class="card">
          ${filtered ? 'No email matches these filters.' : 'No emails yet. Send one with POST /v1/emails.'}
        </p>`
      : tableWrap(
          'Emails',
          html`<table class="stack">
            <caption>
              Emails, newest first${filtered ? ' (filtered)' : ''}
            </caption>
            <thead>
              <tr>
                <th scope="col">Status</th>
                <th scope="col">Subject</th>
                <th scope="col">Recipients</th>
                <th scope="col">Sent</th>
                <th scope="col">Mode and tags</th>
              </tr>
            </thead>
            <tbody>
              ${list.data.map(row)}
            </tbody>
          </table>`,
        );
  const body = html`<h1>Emails</h1>
    ${filterForm(params, sess(k).principal.mode === 'test')}${table}${pager('/dashboard/emails', params, list.next_cursor, cursor !== undefined)}`;
  page(deps.app, k, { title: 'Emails', active: 'emails', body });
}

async function allEvents(deps: Deps, owner: Owner, id: string): Promise<Ev[]> {
  const out: Ev[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 10; i++) {
    const p = await listEvents(deps.app, owner, id, 100, cursor);
    out.push(...p.data);
    if (!p.next_cursor) break;
    cursor = p.next_cursor;
  }
  return out;
}

function facts(e: Email): Html {
  const list = (xs: string[] | null) => (xs && xs.length ? xs.join(', ') : html`<span class="muted">—</span>`);
  return html`<dl class="facts">
    <dt>Status</dt>
    <dd data-email-id="${e.id}" aria-live="polite">${badge(e.status)} ${e.test_mode ? testTag() : ''}</dd>
    <dt>Email id</dt>
    <dd><code>${e.id}</code></dd>
    <dt>From</dt>
    <dd>${e.from}</dd>
    <dt>To</dt>
    <dd>${list(e.to)}</dd>
    <dt>Cc</dt>
    <dd>${list(e.cc)}</dd>
    <dt>Bcc</dt>
    <dd>${list(e.bcc)}</dd>
    <dt>Reply-To</dt>
    <dd>${e.reply_to ?? html`<span class="muted">—</span>`}</dd>
    <dt>Mode</dt>
    <dd>${e.test_mode ? 'test (never delivered, never charged)' : 'live'}</dd>
    <dt>Tags</dt>
    <dd>${e.tags?.length ? chips(e.tags) : html`<span class="muted">—</span>`}</dd>
    <dt>Credits charged</dt>
    <dd>${e.credits_charged}</dd>
    <dt>Created</dt>
    <dd>${time(e.created_at)}</dd>
    ${
      e.scheduled_at
        ? html`<dt>Scheduled for</dt>
            <dd>${time(e.scheduled_at)}</dd>`
        : ''
    }
    <dt>Tracking</dt>
    <dd>opens ${e.tracking.opens ? 'on' : 'off'}, clicks ${e.tracking.clicks ? 'on' : 'off'}</dd>
  </dl>`;
}

async function detailPage(deps: Deps, k: DCtx) {
  const s = sess(k);
  const e = presentEmail(await getEmail(deps.app, s.principal, k.params.id));
  const events = await allEvents(deps, s.principal, e.id);
  const cancel =
    e.status === 'queued' && can(s, 'emails:send')
      ? html`<form method="post" action="/dashboard/emails/${e.id}/cancel">
          ${csrfField(s)}<button class="danger" type="submit">Cancel this email</button>
        </form>`
      : '';
  const live =
    FINAL.has(e.status) && events.length > 0 ? '' : html` data-live-url="/dashboard/emails/${e.id}/timeline"`;
  const body = html`<p><a href="/dashboard/emails">← All emails</a></p><h1>${e.subject || '(no subject)'}</h1>
    <section class="card" aria-labelledby="facts-h"><h2 id="facts-h" class="sr-only">Details</h2>${facts(e)}${cancel}</section>
    <section aria-labelledby="tl-h"><h2 id="tl-h">Delivery timeline</h2><div${live}>${timeline(e, events)}</div></section>`;
  page(deps.app, k, { title: e.subject || e.id, active: 'emails', body });
}

export function emailPages(r: DRouter, deps: Deps) {
  r.get('/emails', (k: DCtx) => listPage(deps, k));
  r.get('/emails/statuses', async (k: DCtx) => {
    const ids = (qs(k, 'ids') ?? '')
      .split(',')
      .filter((x) => /^em_[0-9a-z]{1,40}$/.test(x))
      .slice(0, 100);
    const out: Record<string, string> = {};
    for (const id of ids) {
      try {
        out[id] = (await getEmail(deps.app, sess(k).principal, id)).status;
      } catch {
        /* not this team's */
      }
    }
    k.body = out;
  });
  r.get('/emails/:id', (k: DCtx) => detailPage(deps, k));
  r.get('/emails/:id/timeline', async (k: DCtx) => {
    const owner = sess(k).principal;
    const e = presentEmail(await getEmail(deps.app, owner, k.params.id));
    render(k, timeline(e, await allEvents(deps, owner, e.id)));
  });
  r.post('/emails/:id/cancel', async (k: DCtx) => {
    requireScope(sess(k).principal, 'emails:send');
    await cancelEmail(deps.app, sess(k).principal, k.params.id);
    seeOther(k, `/dashboard/emails/${encodeURIComponent(k.params.id)}${query({ notice: 'email_canceled' })}`);
  });
}
