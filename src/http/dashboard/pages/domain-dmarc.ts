// The DMARC part of a domain's page: what the aggregate reports of the last 30 days say (GET /v1/domains/{id}/dmarc):
// the pass rate by day as a chart, and the sources, those that are not ours and fail DMARC first (spoofing, or a
// sender of the domain's mail that lacks DKIM/SPF), with their reverse DNS and this service's IPs marked.
import { dmarcView, type DmarcSource } from '../../../services/dmarc-summary.js';
import type { Ctx } from '../../../services/context.js';
import { chart, percent, PALETTE } from '../charts.js';
import { html, type Html } from '../html.js';
import { tableWrap } from '../layout.js';

const DAYS = 30;
const failing = (s: DmarcSource) => s.messages - s.dmarc_pass;

/** Failing sources that are not ours first (most failures first), then the rest by messages. */
export function dashboardOrder(sources: readonly DmarcSource[]): DmarcSource[] {
  const alarm = (s: DmarcSource) => !s.ours && failing(s) > 0;
  const first = sources.filter(alarm).sort((a, b) => failing(b) - failing(a));
  return [...first, ...sources.filter((s) => !alarm(s))];
}

function sourceRow(s: DmarcSource): Html {
  const ours = s.ours
    ? html`<span class="badge s-verified" data-ours="true">ours</span>`
    : html`<span class="muted" data-ours="false">not ours</span>`;
  const fail = failing(s) > 0 && !s.ours ? html` <span class="badge s-failed">failing</span>` : '';
  const d = s.disposition;
  return html`<tr>
    <td data-label="Source"><code>${s.source_ip}</code><br /><small>${s.reverse_dns ?? 'no reverse DNS'}</small></td>
    <td data-label="Ours">${ours}${fail}</td>
    <td data-label="Messages">${s.messages}</td>
    <td data-label="DMARC pass">${s.dmarc_pass} (${percent(s.messages ? s.dmarc_pass / s.messages : 0)})</td>
    <td data-label="DKIM aligned">${s.dkim_aligned}</td>
    <td data-label="SPF aligned">${s.spf_aligned}</td>
    <td data-label="Quarantined / rejected">${d.quarantine} / ${d.reject}</td>
    <td data-label="Reporters">${s.reporters.join(', ')}</td>
  </tr>`;
}

function sourcesTable(sources: DmarcSource[]): Html {
  if (sources.length === 0) return html`<p>No DMARC aggregate reports for this domain in the last ${DAYS} days.</p>`;
  return tableWrap(
    'DMARC sources',
    html`<table class="stack" id="dmarc-sources">
      <caption>
        Where mail in this domain's name came from, as reported
      </caption>
      <thead>
        <tr>
          <th scope="col">Source</th>
          <th scope="col">Ours</th>
          <th scope="col">Messages</th>
          <th scope="col">DMARC pass</th>
          <th scope="col">DKIM aligned</th>
          <th scope="col">SPF aligned</th>
          <th scope="col">Quarantined / rejected</th>
          <th scope="col">Reporters</th>
        </tr>
      </thead>
      <tbody>
        ${dashboardOrder(sources).map(sourceRow)}
      </tbody>
    </table>`,
  );
}

/** The section: totals, the chart of the pass rate by day, the sources table. */
export async function dmarcSection(ctx: Ctx, teamId: string, domainId: string): Promise<Html> {
  const { summary: s, days: all } = await dmarcView(ctx, teamId, domainId, DAYS);
  // Days without reports are left out: no report is not a 0% pass rate.
  const days = all.filter((x) => x.messages > 0);
  const every = Math.max(1, Math.ceil(days.length / 6));
  const passChart = days.length
    ? chart({
        id: 'chart-dmarc',
        title: `DMARC pass rate by day, last ${DAYS} days`,
        kind: 'line',
        labels: days.map((x) => x.day),
        tick: (i) => ((days.length - 1 - i) % every === 0 ? days[i].day.slice(5) : null),
        xTitle: 'Day the report period began (UTC; days with reports)',
        yTitle: 'Pass rate',
        format: percent,
        series: [{ name: 'DMARC pass rate', values: days.map((x) => x.dmarc_pass_rate), ...PALETTE.delivered }],
      })
    : '';
  if (s.messages === 0)
    return html`<section class="card" aria-labelledby="dmarc-h">
      <h2 id="dmarc-h">DMARC reports</h2>
      ${sourcesTable([])}
    </section>`;
  return html`<section class="card" aria-labelledby="dmarc-h">
    <h2 id="dmarc-h">DMARC reports</h2>
    <p>
      ${s.reports} reports from receiving providers over the last ${DAYS} days cover ${s.messages} messages:
      ${percent(s.dmarc_pass_rate)} passed DMARC (DKIM aligned ${percent(s.dkim_aligned_rate)}, SPF aligned
      ${percent(s.spf_aligned_rate)}). ${s.unauthenticated_reports ? unvouched(s.unauthenticated_reports) : ''}
    </p>
    ${passChart ? html`<div class="charts">${passChart}</div>` : ''} ${sourcesTable(s.sources)}
  </section>`;
}

/** The reports a summary leaves out (dmarc_summary.unauthenticated_reports), said on the page. */
const unvouched = (n: number) =>
  html`${n === 1 ? 'One more report, which nothing' : `${n} more reports, which nothing`} aligned with the reporter
  vouched for, ${n === 1 ? 'is' : 'are'} not counted.`;
