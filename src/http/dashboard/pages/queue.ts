// The Queue page. Operators: the waiting recipients summed by site, team and state, the oldest of them, and
// bulk hold/release/retry/purge by filters behind a confirmation step. Teams: their own waiting mail, hold/release/cancel.
import { ApiError } from '../../../core/errors.js';
import { QUEUE_ACTIONS, QUEUE_STATES, type QueueAction } from '../../../core/status.js';
import { cancelEmail } from '../../../services/emails.js';
import { requireScope } from '../../../services/keys.js';
import {
  FILTER_NAMES,
  ownerFilter,
  parseFilter,
  queueAction,
  queueList,
  queueSummary,
  type FilterInput,
  type QueueEntry,
  type QueueGroup,
} from '../../../services/queue.js';
import type { Deps } from '../../app.js';
import { html, query, type Html } from '../html.js';
import { badge, can, csrfField, tableWrap, time } from '../layout.js';
import { field, page, qs, seeOther, sess, type DCtx, type DRouter } from '../kit.js';

const LABEL: Record<string, string> = {
  team: 'Team',
  site: 'Site',
  domain: 'Recipient domain',
  sender_domain: 'Sender domain',
  tag: 'Tag',
  email: 'Email id',
  state: 'State',
  older_than: 'Older than (seconds)',
};
const DONE: Record<QueueAction, string> = { hold: 'Held', release: 'Released', retry: 'Retried', purge: 'Purged' };

function groupTable(title: string, groups: QueueGroup[]): Html {
  return tableWrap(
    title,
    html`<table class="stack">
      <caption>
        ${title}
      </caption>
      <thead>
        <tr>
          <th scope="col">${title.replace('By ', '').replace(/^./, (c) => c.toUpperCase())}</th>
          <th scope="col">Recipients</th>
          <th scope="col">Held</th>
          <th scope="col">Deferred</th>
          <th scope="col">Oldest (seconds)</th>
        </tr>
      </thead>
      <tbody>
        ${
          groups.length === 0
            ? html`<tr>
                <td colspan="5" class="muted">Nothing waits.</td>
              </tr>`
            : ''
        }
        ${groups.map(
          (g) =>
            html`<tr>
              <th scope="row">${g.key}</th>
              <td data-label="Recipients">${g.recipients}</td>
              <td data-label="Held">${g.held}</td>
              <td data-label="Deferred">${g.deferred}</td>
              <td data-label="Oldest (seconds)">${g.oldest_seconds}</td>
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
}

/** The oldest waiting recipients; an Actions column only when `actions` is given (a team's own mail). */
function listTable(rows: QueueEntry[], actions?: (r: QueueEntry) => Html | string): Html {
  const cols = actions ? 8 : 7;
  return tableWrap(
    'Waiting recipients',
    html`<table class="stack" id="queue">
      <caption>
        Waiting recipients, oldest first (at most 100)
      </caption>
      <thead>
        <tr>
          <th scope="col">Recipient</th>
          <th scope="col">Email</th>
          <th scope="col">Site</th>
          <th scope="col">State</th>
          <th scope="col">Attempts</th>
          <th scope="col">Next attempt</th>
          <th scope="col">Last reply</th>
          ${actions ? html`<th scope="col">Actions</th>` : ''}
        </tr>
      </thead>
      <tbody>
        ${
          rows.length === 0
            ? html`<tr>
                <td colspan="${cols}" class="muted">Nothing waits.</td>
              </tr>`
            : ''
        }
        ${rows.map(
          (r) =>
            html`<tr data-state="${r.state}">
              <th scope="row">${r.recipient}</th>
              <td data-label="Email"><a href="/dashboard/emails/${r.email_id}">${r.email_id}</a></td>
              <td data-label="Site">${r.site}</td>
              <td data-label="State">${badge(r.state)}</td>
              <td data-label="Attempts">${r.attempts}</td>
              <td data-label="Next attempt">${time(r.next_attempt_at)}</td>
              <td data-label="Last reply">${r.last_reply ?? '—'}</td>
              ${actions ? html`<td data-label="Actions">${actions(r)}</td>` : ''}
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
}

/** The filters of a GET query or a form, only those given. */
function filtersFrom(get: (name: string) => string | undefined): FilterInput {
  return Object.fromEntries(FILTER_NAMES.map((n) => [n, get(n)]).filter(([, v]) => v)) as FilterInput;
}

function filterForm(f: FilterInput, hidden: Html | string, submit: string, method = 'get'): Html {
  const name = method === 'post' ? 'Bulk action' : 'Filters';
  return html`<form
    method="${method}"
    action="/dashboard/queue${method === 'post' ? '/confirm' : ''}"
    class="filters"
    aria-label="${name}"
  >
    ${hidden}
    ${FILTER_NAMES.map((n) =>
      n === 'state'
        ? html`<label
            >${LABEL[n]}
            <select name="state">
              <option value="">any</option>
              ${QUEUE_STATES.map((s) => html`<option value="${s}" ${f.state === s ? 'selected' : ''}>${s}</option>`)}
            </select></label
          >`
        : html`<label>${LABEL[n]} <input name="${n}" value="${String(f[n] ?? '')}" /></label>`,
    )}
    ${
      submit === 'Filter'
        ? ''
        : html`<label
            >Action
            <select name="action">
              ${QUEUE_ACTIONS.map((a) => html`<option value="${a}">${a}</option>`)}
            </select></label
          >`
    }
    <button type="submit">${submit}</button>
  </form>`;
}

async function operatorPage(deps: Deps, k: DCtx): Promise<void> {
  const input = filtersFrom((n) => qs(k, n));
  const f = await parseFilter(deps.app, input);
  const by = async (g: 'site' | 'team' | 'state') => (await queueSummary(deps.app, g, f)).groups;
  const [bySite, byTeam, byState, list] = [
    await by('site'),
    await by('team'),
    await by('state'),
    await queueList(deps.app, f, 100),
  ];
  const done = qs(k, 'done') as QueueAction | undefined;
  const matched = Number(qs(k, 'matched'));
  const notice = done && DONE[done] && Number.isInteger(matched) ? `${DONE[done]} ${matched} recipients.` : undefined;
  const body = html`<h1>Queue</h1>
    <p>Every recipient still waiting, whatever its team. Bulk actions ask for confirmation first.</p>
    <h2>Filters</h2>
    ${filterForm(input, '', 'Filter')}
    <h2>Summary</h2>
    ${groupTable('By site', bySite)} ${groupTable('By team', byTeam)} ${groupTable('By state', byState)}
    <h2>Bulk action</h2>
    <p>Applies to every waiting recipient matching these filters (a hold or purge needs at least one filter).</p>
    ${filterForm(input, csrfField(sess(k)), 'Review', 'post')}
    <h2>Oldest waiting</h2>
    ${listTable(list)}`;
  page(deps.app, k, { title: 'Queue', active: 'queue', body, notice });
}

/** Step one of a bulk action: what it will touch, and a button to do it. Nothing changes yet. */
async function confirmPage(deps: Deps, k: DCtx): Promise<void> {
  if (!sess(k).operator) throw new ApiError('not_found', 'page_not_found', 'There is no such page.');
  const input = filtersFrom((n) => field(k, n) || undefined);
  const action = field(k, 'action') as QueueAction;
  if (!QUEUE_ACTIONS.includes(action)) throw new ApiError('validation_error', 'invalid_parameter', 'Pick an action.');
  const f = await parseFilter(deps.app, input);
  const empty = Object.keys(input).length === 0;
  const total = (await queueSummary(deps.app, 'state', f)).groups.reduce((n, g) => n + g.recipients, 0);
  const hidden = Object.entries(input).map(([n, v]) => html`<input type="hidden" name="${n}" value="${String(v)}" />`);
  const body = html`<h1>Confirm: ${action}</h1>
    <p>
      ${Object.keys(input).length ? html`Filters: ${Object.entries(input).map(([n, v]) => html`<code>${n}=${String(v)}</code> `)}` : 'No filter: the whole queue.'}
      ${total} waiting recipients match; the ${action} applies to those in a state it allows.
    </p>
    ${action === 'purge' ? html`<p class="error">A purge cannot be undone: the recipients end failed.</p>` : ''}
    <form method="post" action="/dashboard/queue/apply">
      ${csrfField(sess(k))} ${hidden}
      <input type="hidden" name="action" value="${action}" />
      ${empty && (action === 'hold' || action === 'purge') ? html`<input type="hidden" name="all" value="1" />` : ''}
      ${action === 'purge' ? html`<label>Reason (optional) <input name="reason" maxlength="500" /></label>` : ''}
      <button type="submit">Yes, ${action} them</button>
      <a href="/dashboard/queue${query(input as Record<string, string>)}">Cancel</a>
    </form>`;
  page(deps.app, k, { title: `Confirm ${action}`, active: 'queue', body });
}

async function apply(deps: Deps, k: DCtx): Promise<void> {
  if (!sess(k).operator) throw new ApiError('not_found', 'page_not_found', 'There is no such page.');
  const input = filtersFrom((n) => field(k, n) || undefined);
  const action = field(k, 'action') as QueueAction;
  if (!QUEUE_ACTIONS.includes(action)) throw new ApiError('validation_error', 'invalid_parameter', 'Pick an action.');
  const f = await parseFilter(deps.app, input);
  const r = await queueAction(deps.app, action, f, {
    all: field(k, 'all') === '1',
    note: field(k, 'reason') || undefined,
  });
  seeOther(
    k,
    `/dashboard/queue${query({ ...(input as Record<string, string>), done: action, matched: String(r.matched) })}`,
  );
}

async function teamPage(deps: Deps, k: DCtx): Promise<void> {
  const s = sess(k);
  const rows = await queueList(deps.app, ownerFilter(s.principal), 100);
  const write = can(s, 'emails:send');
  const button = (email: string, what: string, label: string) =>
    html`<form method="post" action="/dashboard/queue/emails/${email}/${what}" class="inline">
      ${csrfField(s)}<button type="submit" aria-label="${label} ${email}">${label}</button>
    </form>`;
  // The operator's hold is the operator's to release (a team's release leaves it): no button for it.
  const holdOrRelease = (r: QueueEntry) =>
    r.state !== 'held'
      ? button(r.email_id, 'hold', 'Hold')
      : r.held_by === 'operator'
        ? html`<span class="muted">Held by the operator</span>`
        : button(r.email_id, 'release', 'Release');
  const actions = (r: QueueEntry) =>
    write
      ? html`${holdOrRelease(r)}
        ${r.state === 'scheduled' || r.state === 'due' || r.state === 'held' ? button(r.email_id, 'cancel', 'Cancel') : ''}`
      : '';
  const done = qs(k, 'done') as QueueAction | 'cancel' | undefined;
  const notice =
    done === 'cancel'
      ? 'The email was canceled and its credits refunded.'
      : done && DONE[done as QueueAction]
        ? `${DONE[done as QueueAction]} ${Number(qs(k, 'matched')) || 0} recipients.`
        : undefined;
  const body = html`<h1>Queue</h1>
    <p>
      Your mail still waiting for delivery. Hold keeps an email from being attempted until you release it; what the
      operator holds, only the operator releases.
    </p>
    ${listTable(rows, actions)}`;
  page(deps.app, k, { title: 'Queue', active: 'queue', body, notice });
}

export function queuePages(r: DRouter, deps: Deps): void {
  r.get('/queue', (k: DCtx) => (sess(k).operator ? operatorPage(deps, k) : teamPage(deps, k)));
  r.post('/queue/confirm', (k: DCtx) => confirmPage(deps, k));
  r.post('/queue/apply', (k: DCtx) => apply(deps, k));
  r.post('/queue/emails/:id/:what', async (k: DCtx) => {
    const s = sess(k);
    requireScope(s.principal, 'emails:send');
    const what = k.params.what;
    if (what === 'cancel') await cancelEmail(deps.app, s.principal, k.params.id);
    else if (what === 'hold' || what === 'release') {
      const f = ownerFilter(s.principal, { emailId: k.params.id });
      const r = await queueAction(deps.app, what, f, { source: s.operator ? 'operator' : 'team' });
      return seeOther(k, `/dashboard/queue${query({ done: what, matched: String(r.matched) })}`);
    } else throw new ApiError('not_found', 'page_not_found', 'There is no such page.');
    seeOther(k, `/dashboard/queue${query({ done: 'cancel' })}`);
  });
}
