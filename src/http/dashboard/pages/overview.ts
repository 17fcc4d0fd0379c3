// The Overview page: the team's sending over the last 24 hours (by hour) or 30 days (by day) from GET /v1/stats'
// counters, as SVG charts (counts per status; bounce and complaint rates against the 0.3% line) and totals.
import { getStats, rates, type Bucket, type Stats } from '../../../services/stats.js';
import { getSiteStats, type SiteStats } from '../../../services/site-stats.js';
import type { Deps } from '../../app.js';
import { html, query, type Html } from '../html.js';
import { page, qs, sess, type DCtx, type DRouter } from '../kit.js';
import { chart, percent, PALETTE } from '../charts.js';

/** The complaint rate mailbox providers enforce (Gmail and Yahoo sender rules): 0.3%. */
export const COMPLAINT_LIMIT = 0.003;
const RANGES = {
  '24h': { label: 'Last 24 hours', granularity: 'hour', ms: 24 * 3_600_000 },
  '30d': { label: 'Last 30 days', granularity: 'day', ms: 30 * 86_400_000 },
} as const;
type Range = keyof typeof RANGES;

function labelsOf(s: Stats): { labels: string[]; tick: (i: number) => string | null } {
  const hourly = s.granularity === 'hour';
  const labels = s.data.map((b) =>
    hourly ? `${b.start.slice(0, 13).replace('T', ' ')}:00 UTC` : b.start.slice(0, 10),
  );
  const every = hourly ? 4 : 5;
  const last = s.data.length - 1;
  const tick = (i: number) =>
    (last - i) % every === 0 ? (hourly ? s.data[i].start.slice(11, 16) : s.data[i].start.slice(5, 10)) : null;
  return { labels, tick };
}

const col = (s: Stats, k: keyof Bucket) => s.data.map((b) => b[k] as number);

function charts(s: Stats, range: Range): Html {
  const { labels, tick } = labelsOf(s);
  const xTitle = s.granularity === 'hour' ? 'Hour (UTC)' : 'Day (UTC)';
  const counts = chart({
    id: 'chart-counts',
    title: `Emails by status, ${RANGES[range].label.toLowerCase()}`,
    kind: 'line',
    labels,
    tick,
    xTitle,
    yTitle: 'Emails',
    series: [
      { name: 'sent', values: col(s, 'sent'), ...PALETTE.sent },
      { name: 'delivered', values: col(s, 'delivered'), ...PALETTE.delivered },
      { name: 'deferred', values: col(s, 'delivery_delayed'), ...PALETTE.deferred },
      { name: 'bounced', values: col(s, 'bounced'), ...PALETTE.bounced },
      { name: 'complained', values: col(s, 'complained'), ...PALETTE.complained },
    ],
  });
  const perBucket = s.data.map((b) => rates(b));
  const rateChart = chart({
    id: 'chart-rates',
    title: `Bounce and complaint rates, ${RANGES[range].label.toLowerCase()}`,
    kind: 'line',
    labels,
    tick,
    xTitle,
    yTitle: 'Rate',
    format: percent,
    threshold: { value: COMPLAINT_LIMIT, label: '0.3% limit' },
    series: [
      { name: 'bounce rate', values: perBucket.map((r) => r.bounce_rate), ...PALETTE.bounced },
      { name: 'complaint rate', values: perBucket.map((r) => r.complaint_rate), ...PALETTE.complained },
    ],
  });
  return html`<div class="charts">${counts}${rateChart}</div>`;
}

function totals(s: Stats): Html {
  const t = s.totals;
  const over = t.complaint_rate > COMPLAINT_LIMIT;
  return html`<section class="card" aria-labelledby="totals-h">
    <h2 id="totals-h">Totals</h2>
    <dl class="facts" id="stats-totals">
      <dt>Sent</dt>
      <dd data-stat="sent">${t.sent}</dd>
      <dt>Delivered</dt>
      <dd data-stat="delivered">${t.delivered}</dd>
      <dt>Deferred</dt>
      <dd data-stat="delivery_delayed">${t.delivery_delayed}</dd>
      <dt>Bounced</dt>
      <dd data-stat="bounced">${t.bounced}</dd>
      <dt>Complained</dt>
      <dd data-stat="complained">${t.complained}</dd>
      <dt>Bounce rate</dt>
      <dd data-stat="bounce_rate">${percent(t.bounce_rate)} of sent</dd>
      <dt>Complaint rate</dt>
      <dd data-stat="complaint_rate">
        ${percent(t.complaint_rate)} of delivered
        ${over ? html`<strong class="over">above the 0.3% limit</strong>` : html`(limit 0.3%)`}
      </dd>
    </dl>
  </section>`;
}

/** GET /v1/stats/sites as a table: a complaint rate above the 0.3% line is flagged in words, not by colour only. */
function sitesTable(sites: readonly SiteStats[]): Html {
  const rows = sites.map(
    (s) =>
      html`<tr data-site="${s.site}">
        <th scope="row">${s.site}</th>
        <td>${s.sent}</td>
        <td>${s.delivered}</td>
        <td>${s.bounced} (${percent(s.bounce_rate)})</td>
        <td>
          ${s.complained} (${percent(s.complaint_rate)})
          ${s.complaint_rate > COMPLAINT_LIMIT ? html`<strong class="over">above the 0.3% limit</strong>` : ''}
        </td>
        <td>${s.deferrals} (${percent(s.deferral_rate)})</td>
        <td>${s.median_delivery_seconds === null ? '–' : `${s.median_delivery_seconds} s`}</td>
      </tr>`,
  );
  return html`<section class="card" aria-labelledby="sites-h">
    <h2 id="sites-h">By receiving site</h2>
    ${
      sites.length
        ? html`<table id="site-stats">
            <caption>
              Recipients per receiving site (provider), most sent first. Complaint rate limit: 0.3% of delivered.
            </caption>
            <thead>
              <tr>
                <th scope="col">Site</th>
                <th scope="col">Sent</th>
                <th scope="col">Delivered</th>
                <th scope="col">Bounced (rate)</th>
                <th scope="col">Complained (rate)</th>
                <th scope="col">Deferrals (rate)</th>
                <th scope="col">Median delivery time</th>
              </tr>
            </thead>
            <tbody>
              ${rows}
            </tbody>
          </table>`
        : html`<p class="muted">No recipients reached a site in this period.</p>`
    }
  </section>`;
}

function controls(k: DCtx, range: Range, test: boolean): Html {
  const live = sess(k).principal.mode === 'live';
  const link = (r: Range) =>
    html`<a
      href="/dashboard/overview${query({ range: r, mode: test && live ? 'test' : undefined })}"
      ${range === r ? html` aria-current="page"` : ''}
      >${RANGES[r].label}</a
    >`;
  const mode = live
    ? html`<a href="/dashboard/overview${query({ range, mode: test ? undefined : 'test' })}"
        >${test ? 'Show live mode' : 'Show test mode'}</a
      >`
    : '';
  return html`<nav class="pager" aria-label="Period">${link('24h')} ${link('30d')} ${mode}</nav>`;
}

async function overviewPage(deps: Deps, k: DCtx) {
  const range: Range = qs(k, 'range') === '30d' ? '30d' : '24h';
  const r = RANGES[range];
  const p = sess(k).principal;
  const wantTest = p.mode === 'test' || qs(k, 'mode') === 'test';
  const now = deps.app.now();
  const window = {
    from: new Date(now - r.ms).toISOString(),
    to: new Date(now).toISOString(),
    test_mode: wantTest ? ('true' as const) : undefined,
  };
  const s = await getStats(deps.app, p, { granularity: r.granularity, ...window });
  const sites = (await getSiteStats(deps.app, p, window)).data;
  const body = html`<h1>Overview</h1>
    <p class="muted">
      ${s.test_mode ? 'Test mode: simulated emails only.' : 'Live emails.'} Emails are counted when they reach a status;
      the bounce rate is bounced per sent, the complaint rate complained per delivered.
    </p>
    ${controls(k, range, s.test_mode)}${totals(s)}${charts(s, range)}${sitesTable(sites)}`;
  page(deps.app, k, { title: 'Overview', active: 'overview', body });
}

export function overviewPages(r: DRouter, deps: Deps) {
  r.get('/overview', (k: DCtx) => overviewPage(deps, k));
}
