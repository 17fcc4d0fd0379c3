// Received page: mail received at the team's receiving domains (docs/receiving.md), newest first, each with its thread
// (the email of ours it answers, linked) and its SPF/DKIM/DMARC verdicts. Like GET /v1/inbound it needs emails:read,
// and a test-mode session sees none (received mail is live data).
import { listInbound } from '../../../services/inbound-mail.js';
import type { InboundEmail } from '../../../services/present-inbound.js';
import type { Deps } from '../../app.js';
import { html, type Html } from '../html.js';
import { can, pager, readOnly, tableWrap, time } from '../layout.js';
import { page, qs, sess, type DCtx, type DRouter } from '../kit.js';

const verdict = (name: string, v: string) =>
  html`<span class="badge s-${v === 'pass' ? 'delivered' : v === 'none' ? 'queued' : 'bounced'}">${name} ${v}</span> `;

function row(m: InboundEmail): Html {
  const from = m.from ? (m.from.name ? `${m.from.name} <${m.from.address ?? ''}>` : (m.from.address ?? '')) : '';
  return html`<tr data-inbound="${m.id}">
    <td data-label="Received">${time(m.received_at)}</td>
    <td data-label="From" class="addr">${from || html`<span class="muted">none</span>`}</td>
    <td data-label="To" class="addr">${m.envelope.rcpt_to.map((r) => r.address).join(', ')}</td>
    <td data-label="Subject">${m.subject ?? html`<span class="muted">(no subject)</span>`}</td>
    <td data-label="Thread">
      ${
        m.email_id
          ? html`reply to <a href="/dashboard/emails/${m.email_id}"><code>${m.email_id}</code></a>`
          : html`<span class="muted">new</span>`
      }
    </td>
    <td data-label="Auth">
      ${verdict('SPF', m.auth.spf)}${verdict('DKIM', m.auth.dkim)}${verdict('DMARC', m.auth.dmarc)}
    </td>
    <td data-label="Attachments">${m.attachments.length}</td>
  </tr>`;
}

export function inboundPages(r: DRouter, deps: Deps) {
  r.get('/received', async (k: DCtx) => {
    const s = sess(k);
    if (!can(s, 'emails:read'))
      return page(deps.app, k, {
        title: 'Received',
        active: 'received',
        body: html`<h1>Received mail</h1>
          ${readOnly('emails:read', 'see received mail')}`,
      });
    const cursor = qs(k, 'cursor');
    const list = await listInbound(deps.app, s.principal, 20, cursor);
    const table = tableWrap(
      'Received mail',
      html`<table class="stack" id="received">
        <caption>
          Mail received at the team's receiving domains, newest first
        </caption>
        <thead>
          <tr>
            <th scope="col">Received</th>
            <th scope="col">From</th>
            <th scope="col">To</th>
            <th scope="col">Subject</th>
            <th scope="col">Thread</th>
            <th scope="col">Auth</th>
            <th scope="col">Attachments</th>
          </tr>
        </thead>
        <tbody>
          ${list.data.map(row)}
        </tbody>
      </table>`,
    );
    const body = html`<h1>Received mail</h1>
      <p>Turn receiving on for a domain with <code>PATCH /v1/domains/{id}</code> (docs/receiving.md).</p>
      ${list.data.length ? table : html`<p class="card">No mail received yet.</p>`}
      ${pager('/dashboard/received', {}, list.next_cursor, cursor !== undefined)}`;
    page(deps.app, k, { title: 'Received', active: 'received', body });
  });
}
