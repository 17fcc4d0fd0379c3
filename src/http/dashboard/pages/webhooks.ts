// Webhooks page: the team's endpoints (never their secrets) with their most recent deliveries and
// each delivery's outcome. Like the API, it needs webhooks:write; endpoints are managed over the API.
import { listOutbox, listEndpoints } from '../../../services/webhooks.js';
import type { Owner } from '../../../services/keys.js';
import type { Deps } from '../../app.js';
import { html, type Html } from '../html.js';
import { badge, can, chips, pager, readOnly, tableWrap, time } from '../layout.js';
import { page, qs, sess, type DCtx, type DRouter } from '../kit.js';

type Endpoint = Awaited<ReturnType<typeof listEndpoints>>['data'][number];
type Delivery = Awaited<ReturnType<typeof listOutbox>>['data'][number];

function deliveryRow(d: Delivery): Html {
  const outcome = d.last_status_code !== null ? `HTTP ${d.last_status_code}` : (d.last_error ?? '');
  return html`<tr>
    <td data-label="Event"><code>${d.event_type}</code></td>
    <td data-label="Status">${badge(d.status)}</td>
    <td data-label="Attempts">${d.attempt_count}</td>
    <td data-label="Last answer">
      ${outcome}${d.last_error && d.last_status_code !== null ? html` — ${d.last_error}` : ''}
    </td>
    <td data-label="Created">${time(d.created_at)}</td>
    <td data-label="Next try">${time(d.next_attempt_at)}</td>
  </tr>`;
}

async function endpointCard(deps: Deps, owner: Owner, e: Endpoint, i: number): Promise<Html> {
  const recent = await listOutbox(deps.app, owner, e.id, 10);
  const state = e.enabled
    ? badge('active')
    : html`<span class="badge s-failed">disabled</span> ${e.disabled_reason ?? ''}`;
  const table =
    recent.data.length === 0
      ? html`<p class="muted">No deliveries yet.</p>`
      : tableWrap(
          `Recent deliveries to ${e.url}`,
          html`<table class="stack">
            <caption>
              Recent deliveries, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Created</th>
                <th scope="col">Next try</th>
              </tr>
            </thead>
            <tbody>
              ${recent.data.map(deliveryRow)}
            </tbody>
          </table>`,
        );
  return html`<section class="card" aria-labelledby="wh-${i}">
    <h2 id="wh-${i}"><code>${e.url}</code></h2>
    <dl class="facts">
      <dt>Id</dt>
      <dd><code>${e.id}</code></dd>
      <dt>State</dt>
      <dd>${state}</dd>
      <dt>Events</dt>
      <dd>${chips(e.events)}</dd>
      <dt>Created</dt>
      <dd>${time(e.created_at)}</dd>
    </dl>
    <h3>Recent deliveries</h3>
    ${table}
  </section>`;
}

export function webhookPages(r: DRouter, deps: Deps) {
  r.get('/webhooks', async (k: DCtx) => {
    const s = sess(k);
    if (!can(s, 'webhooks:write')) {
      return page(deps.app, k, {
        title: 'Webhooks',
        active: 'webhooks',
        body: html`<h1>Webhook endpoints</h1>
          ${readOnly('webhooks:write', 'see or manage webhook endpoints')}`,
      });
    }
    const cursor = qs(k, 'cursor');
    const list = await listEndpoints(deps.app, s.principal, 20, cursor);
    const cards: Html[] = [];
    for (const [i, e] of list.data.entries()) cards.push(await endpointCard(deps, s.principal, e, i));
    const body = html`<h1>Webhook endpoints</h1>
      <p>Endpoints are created and changed with <code>POST /v1/webhooks</code>; their secrets are shown only then.</p>
      ${list.data.length ? cards : html`<p class="card">No webhook endpoints yet.</p>`}
      ${pager('/dashboard/webhooks', {}, list.next_cursor, cursor !== undefined)}`;
    page(deps.app, k, { title: 'Webhooks', active: 'webhooks', body });
  });
}
