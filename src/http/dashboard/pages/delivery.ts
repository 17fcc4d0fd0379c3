// The Delivery page, for operator sessions only (404 for team keys): each site's state, queue, rate and limits,
// suspensions and throttles per source IP, each sending IP's health, recipient domains' TLS policies and failures,
// warm-up progress per IP, and per-site charts of the last 24 hours.
import { ApiError } from '../../../core/errors.js';
import { listIps, listSites, type IpView, type SiteView } from '../../../services/delivery-control.js';
import { siteSeries, type SiteSeries } from '../../../services/stats.js';
import type { Deps } from '../../app.js';
import { html, type Html } from '../html.js';
import { badge, tableWrap, time } from '../layout.js';
import { page, sess, type DCtx, type DRouter } from '../kit.js';
import { chart, PALETTE } from '../charts.js';
import { ipHealth } from '../../../services/ip-health.js';
import { ipHealthTable } from './ip-health.js';
import { tlsPolicyOverview, type TlsPolicyView } from '../../../services/tls-reports.js';

const siteState = (s: SiteView) =>
  s.ips.some((x) => x.state === 'suspended')
    ? s.ips.every((x) => x.state === 'suspended')
      ? 'suspended'
      : 'partly suspended'
    : s.ips.some((x) => x.state === 'throttled')
      ? 'throttled'
      : 'open';

function sitesTable(sites: SiteView[]): Html {
  return tableWrap(
    'Sites',
    html`<table class="stack" id="sites">
      <caption>
        Sites: destinations sharing limits, with what waits for them now
      </caption>
      <thead>
        <tr>
          <th scope="col">Site</th>
          <th scope="col">State</th>
          <th scope="col">Queued</th>
          <th scope="col">In flight</th>
          <th scope="col">Sent last hour</th>
          <th scope="col">Limits per IP</th>
          <th scope="col">MX</th>
        </tr>
      </thead>
      <tbody>
        ${sites.map(
          (s) =>
            html`<tr data-site="${s.site}">
              <th scope="row" data-label="Site">${s.site}</th>
              <td data-label="State">${badge(siteState(s))}</td>
              <td data-label="Queued">${s.queued}</td>
              <td data-label="In flight">${s.in_flight}</td>
              <td data-label="Sent last hour">${s.sent_last_hour}</td>
              <td data-label="Limits per IP">
                ${s.limits.connections} connections, ${s.limits.messages_per_connection} per connection,
                ${s.limits.rate ?? 'no rate limit'}
              </td>
              <td data-label="MX"><code>${s.mx.slice(0, 3).join(' ')}${s.mx.length > 3 ? ' …' : ''}</code></td>
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
}

function suspensions(sites: SiteView[]): Html {
  const rows = sites.flatMap((s) => s.ips.filter((x) => x.state !== 'open').map((x) => ({ site: s.site, ...x })));
  if (rows.length === 0)
    return html`<p class="card" id="suspensions">No site is suspended or throttled for any IP.</p>`;
  return tableWrap(
    'Suspensions and throttles',
    html`<table class="stack" id="suspensions">
      <caption>
        Suspensions and throttles by site and source IP
      </caption>
      <thead>
        <tr>
          <th scope="col">Site</th>
          <th scope="col">Source IP</th>
          <th scope="col">State</th>
          <th scope="col">Until</th>
          <th scope="col">Rate</th>
          <th scope="col">Reason</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (x) =>
            html`<tr>
              <td data-label="Site">${x.site}</td>
              <td data-label="Source IP"><code>${x.ip}</code></td>
              <td data-label="State">${badge(x.state)}</td>
              <td data-label="Until">${x.until ? time(x.until) : 'until resumed'}</td>
              <td data-label="Rate">${x.rate ?? '—'}</td>
              <td data-label="Reason">${x.reason ?? '—'}</td>
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
}

function warmup(ip: IpView): Html {
  if (!ip.warmup)
    return html`<li><code>${ip.ip}</code> (pool ${ip.pool}): <span class="muted">warmed up (no cap)</span></li>`;
  const w = ip.warmup;
  const cap = Object.values(w.caps_today)[0] ?? null;
  const sites = Object.entries(w.sent_today);
  return html`<li data-ip="${ip.ip}">
    <code>${ip.ip}</code> (pool ${ip.pool}): warm-up day <strong>${w.day}</strong> since ${time(w.started_at)}, cap
    today ${cap === null ? 'none (schedule done)' : html`<strong>${cap}</strong> per site`}
    ${
      sites.length === 0
        ? html`<p class="muted">Nothing sent from it today.</p>`
        : html`<ul>
            ${sites.map(
              ([site, n]) =>
                html`<li>
                  ${site}: ${n}${cap === null ? '' : html` of ${cap}`}
                  ${
                    cap === null
                      ? ''
                      : html`<progress
                          value="${Math.min(n, cap)}"
                          max="${cap}"
                          aria-label="${ip.ip} to ${site}: ${n} of ${cap} today"
                        ></progress>`
                  }
                </li>`,
            )}
          </ul>`
    }
  </li>`;
}

function tlsPolicies(rows: TlsPolicyView[]): Html {
  if (rows.length === 0)
    return html`<p class="card" id="tls-policies">No recipient domain has an MTA-STS policy or a TLS failure.</p>`;
  return tableWrap(
    'TLS policies',
    html`<table class="stack" id="tls-policies">
      <caption>
        Recipient domains' TLS policies and their failed TLS sessions in the last 7 days
      </caption>
      <thead>
        <tr>
          <th scope="col">Domain</th>
          <th scope="col">MTA-STS</th>
          <th scope="col">Override</th>
          <th scope="col">Failures (7 days)</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr data-domain="${r.domain}">
              <th scope="row" data-label="Domain">${r.domain}</th>
              <td data-label="MTA-STS">
                ${r.mode ? html`${r.mode} <code>${r.mx.join(' ')}</code>` : html`<span class="muted">none cached</span>`}
              </td>
              <td data-label="Override">${r.override ?? '—'}</td>
              <td data-label="Failures (7 days)">
                ${
                  r.failed === 0
                    ? '0'
                    : html`<strong>${r.failed}</strong>:
                        ${Object.entries(r.failures)
                          .map(([t, n]) => `${t} ${n}`)
                          .join(', ')}`
                }
              </td>
            </tr>`,
        )}
      </tbody>
    </table>`,
  );
}

function siteChart(s: SiteSeries, i: number): Html {
  const labels = s.hours.map((h) => `${new Date(h).toISOString().slice(0, 13).replace('T', ' ')}:00 UTC`);
  const last = labels.length - 1;
  return chart({
    id: `site-chart-${i}`,
    title: `${s.site}: delivery attempts per hour, last 24 hours`,
    kind: 'bar',
    small: true,
    labels,
    tick: (j) => ((last - j) % 6 === 0 ? new Date(s.hours[j]).toISOString().slice(11, 16) : null),
    xTitle: 'Hour (UTC)',
    yTitle: 'Attempts',
    series: [
      { name: 'delivered', values: s.delivered, ...PALETTE.delivered },
      { name: 'deferred', values: s.deferred, ...PALETTE.deferred },
      { name: 'bounced', values: s.bounced, ...PALETTE.bounced },
    ],
  });
}

async function deliveryPage(deps: Deps, k: DCtx) {
  if (!sess(k).operator) throw new ApiError('not_found', 'page_not_found', 'There is no such page.');
  const sites = (await listSites(deps.app)).sort(
    (a, b) =>
      b.queued + b.in_flight + b.sent_last_hour - (a.queued + a.in_flight + a.sent_last_hour) ||
      a.site.localeCompare(b.site),
  );
  const series = await siteSeries(deps.app);
  const ips = await listIps(deps.app);
  const body = html`<h1>Delivery</h1>
    <p class="muted">
      The delivery loop's view, refreshed every second. Suspend or resume a site with <code>mta site suspend</code> /
      <code>mta site resume</code>; start a warm-up with <code>mta ip warmup</code>.
    </p>
    <h2>Sites</h2>
    ${sitesTable(sites)}
    <h2>Suspensions and throttles</h2>
    ${suspensions(sites)}
    <h2>Sending-IP health</h2>
    ${ipHealthTable(await ipHealth(deps.app))}
    <h2>TLS policies</h2>
    ${tlsPolicies(await tlsPolicyOverview(deps.app))}
    <p class="muted">Daily TLS reports (RFC 8460): <code>mta tls-report --domain DOMAIN --date YYYY-MM-DD</code>.</p>
    <h2>Source IPs and warm-up</h2>
    <ul class="card" id="warmups">
      ${ips.map(warmup)}
    </ul>
    <h2>Last 24 hours per site</h2>
    ${
      series.length === 0
        ? html`<p class="card">No delivery attempts in the last 24 hours.</p>`
        : html`<div class="charts small">${series.map(siteChart)}</div>`
    }`;
  page(deps.app, k, { title: 'Delivery', active: 'delivery', body });
}

export function deliveryPages(r: DRouter, deps: Deps) {
  r.get('/delivery', (k: DCtx) => deliveryPage(deps, k));
}
