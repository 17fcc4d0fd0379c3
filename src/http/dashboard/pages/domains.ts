// Domain pages: the team's domains, one domain's DNS records to publish with each record's check
// result and what DMARC reports say of it (domain-dmarc.ts), re-check now and add a domain (both need domains:write
// and a live key; reading needs domains:read).
import { addDomain, getDomain, listDomains } from '../../../services/domains.js';
import { verifyDomain } from '../../../services/domain-checks.js';
import type { Domain } from '../../../services/present-domain.js';
import { requireLive, requireScope } from '../../../services/keys.js';
import type { Deps } from '../../app.js';
import { html, query, type Html } from '../html.js';
import { badge, can, csrfField, pager, readOnly, tableWrap, time } from '../layout.js';
import { field, page, qs, seeOther, sess, type DCtx, type DRouter } from '../kit.js';
import { dmarcSection } from './domain-dmarc.js';

const TEST_NOTE = html`<p class="note">
  Read-only: this session uses a test key, which reads the team's domains but cannot add, re-check or delete them.
</p>`;

function addForm(k: DCtx): Html {
  const s = sess(k);
  if (!can(s, 'domains:write')) return readOnly('domains:write', 'add domains or re-check their records');
  if (s.principal.mode !== 'live') return TEST_NOTE;
  return html`<form class="filters" method="post" action="/dashboard/domains">
    ${csrfField(s)}
    <div>
      <label for="d-name">New domain</label
      ><input id="d-name" name="name" type="text" required placeholder="example.com" autocomplete="off" />
    </div>
    <div><button type="submit">Add domain</button></div>
  </form>`;
}

async function listPage(deps: Deps, k: DCtx) {
  const s = sess(k);
  if (!can(s, 'domains:read')) {
    return page(deps.app, k, {
      title: 'Domains',
      active: 'domains',
      body: html`<h1>Domains</h1>
        ${readOnly('domains:read', 'see domains')}`,
    });
  }
  const cursor = qs(k, 'cursor');
  const list = await listDomains(deps.app, s.principal.teamId, 50, cursor);
  const table =
    list.data.length === 0
      ? html`<p class="card">No domains yet. Add one to send live email from it.</p>`
      : tableWrap(
          'Domains',
          html`<table class="stack">
            <caption>
              Sending domains
            </caption>
            <thead>
              <tr>
                <th scope="col">Domain</th>
                <th scope="col">Status</th>
                <th scope="col">Records verified</th>
                <th scope="col">Last checked</th>
              </tr>
            </thead>
            <tbody>
              ${list.data.map(
                (d) =>
                  html`<tr>
                    <td data-label="Domain"><a href="/dashboard/domains/${d.id}">${d.name}</a></td>
                    <td data-label="Status">${badge(d.status)}</td>
                    <td data-label="Records verified">
                      ${d.records.filter((r) => r.status === 'verified').length} of ${d.records.length}
                    </td>
                    <td data-label="Last checked">${time(d.last_checked_at)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`,
        );
  const body = html`<h1>Domains</h1>
    ${addForm(k)}${table}${pager('/dashboard/domains', {}, list.next_cursor, cursor !== undefined)}`;
  page(deps.app, k, { title: 'Domains', active: 'domains', body });
}

/**
 * What a record is for when its purpose alone does not say: the return path's two records (MX for
 * bounces, SPF TXT for the envelope sender); the DMARC report authorisation; a DKIM key that is Ed25519, next or retiring (until when).
 */
function keyNote(r: Domain['records'][number]): Html | string {
  if (r.purpose === 'return_path')
    return r.type === 'MX'
      ? html`<br /><small>receives bounces</small>`
      : html`<br /><small>SPF of the bounce address</small>`;
  if (r.purpose === 'dmarc_report_auth') return html`<br /><small>lets DMARC reports reach this service</small>`;
  if (r.algorithm === 'ed25519') return html`<br /><small>Ed25519 key</small>`;
  if (r.state === 'next') return html`<br /><small>next key: used once verified</small>`;
  if (r.state === 'retiring') return html`<br /><small>retiring key: keep until ${time(r.retire_at ?? null)}</small>`;
  return '';
}

function recordsTable(d: Domain): Html {
  return tableWrap(
    'DNS records',
    html`<table class="stack records">
      <caption>
        DNS records to publish for ${d.name}
      </caption>
      <thead>
        <tr>
          <th scope="col">Purpose</th>
          <th scope="col">Type</th>
          <th scope="col">Name</th>
          <th scope="col">Value</th>
          <th scope="col">Check</th>
        </tr>
      </thead>
      <tbody>
        ${d.records.map((r) => {
          const x = r as typeof r & { found?: string | null; error?: string | null };
          return html`<tr>
            <td data-label="Purpose">${r.purpose}${keyNote(r)}</td>
            <td data-label="Type">${r.type}</td>
            <td data-label="Name"><code>${r.name}</code></td>
            <td data-label="Value"><code>${r.value}</code></td>
            <td data-label="Check">
              ${badge(r.status)}${x.error ? html`<br /><span>${x.error}</span>` : ''}${x.found ? html`<br />Found: <code>${x.found}</code>` : ''}
            </td>
          </tr>`;
        })}
      </tbody>
    </table>`,
  );
}

async function detailPage(deps: Deps, k: DCtx) {
  const s = sess(k);
  requireScope(sess(k).principal, 'domains:read');
  const d = await getDomain(deps.app, s.principal.teamId, k.params.id);
  const verify = !can(s, 'domains:write')
    ? readOnly('domains:write', 're-check the records')
    : s.principal.mode !== 'live'
      ? TEST_NOTE
      : html`<form method="post" action="/dashboard/domains/${d.id}/verify">
          ${csrfField(s)}<button type="submit">Check records now</button>
        </form>`;
  const body = html`<p><a href="/dashboard/domains">← All domains</a></p>
    <h1>${d.name} ${badge(d.status)}</h1>
    <section class="card" aria-label="Status">
      <dl class="facts">
        <dt>Status</dt>
        <dd>${d.status}</dd>
        <dt>Added</dt>
        <dd>${time(d.created_at)}</dd>
        <dt>Last checked</dt>
        <dd>${time(d.last_checked_at)}</dd>
      </dl>
      <p>
        Publish these records at your DNS provider. The service re-checks them every few minutes; a domain becomes
        verified once they are found.
      </p>
      ${verify}
    </section>
    ${recordsTable(d)}${await dmarcSection(deps.app, s.principal.teamId, d.id)}`;
  page(deps.app, k, { title: d.name, active: 'domains', body });
}

export function domainPages(r: DRouter, deps: Deps) {
  r.get('/domains', (k: DCtx) => listPage(deps, k));
  r.get('/domains/:id', (k: DCtx) => detailPage(deps, k));
  r.post('/domains', async (k: DCtx) => {
    requireScope(sess(k).principal, 'domains:write');
    requireLive(sess(k).principal, 'add domains');
    const d = await addDomain(deps.app, sess(k).principal.teamId, field(k, 'name'));
    seeOther(k, `/dashboard/domains/${encodeURIComponent(d.id)}${query({ notice: 'domain_added' })}`);
  });
  r.post('/domains/:id/verify', async (k: DCtx) => {
    requireScope(sess(k).principal, 'domains:write');
    requireLive(sess(k).principal, 're-check domains');
    const d = await verifyDomain(deps.app, sess(k).principal.teamId, k.params.id);
    seeOther(k, `/dashboard/domains/${encodeURIComponent(d.id)}${query({ notice: 'domain_checked' })}`);
  });
}
