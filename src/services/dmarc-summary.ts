// What the stored DMARC aggregate reports say of one team domain (decisions.md "DMARC summary"): over a window of
// report start times, the pass and alignment rates, and per source IP its messages, results, dispositions and
// reporters, whether it is one of this service's sending IPs, and its reverse DNS (services/reverse-dns.ts).
// The store sums the records per (source IP, reporter) in SQL; this folds those few rows per source.
import { BlockList, isIP } from 'node:net';
import { notFound } from '../core/errors.js';
import * as store from '../store/dmarc.js';
import type { DmarcReportRow } from '../store/dmarc.js';
import { runPlan, type Gen } from '../store/op.js';
import { domainsNamed, type DomainRow } from '../store/domains.js';
import { configuredIps } from './delivery-control.js';
import { owned } from './domains.js';
import { decodeCursor, page } from './emails.js';
import { reverseDnsFor } from './reverse-dns.js';
import { DAY_MS, timeWindow } from './stats.js';
import type { Ctx } from './context.js';

export interface Disposition {
  none: number;
  quarantine: number;
  reject: number;
}
export interface DmarcSource {
  source_ip: string;
  reverse_dns: string | null;
  ours: boolean;
  messages: number;
  dmarc_pass: number;
  dkim_aligned: number;
  spf_aligned: number;
  disposition: Disposition;
  reporters: string[];
}
export interface DmarcSummary {
  object: 'dmarc_summary';
  domain: string;
  from: string;
  to: string;
  reports: number;
  /** Reports in the window left out: not authenticated (services/dmarc-auth.ts), so not believed. */
  unauthenticated_reports: number;
  messages: number;
  dmarc_pass_rate: number;
  dkim_aligned_rate: number;
  spf_aligned_rate: number;
  sources: DmarcSource[];
}
export interface DmarcWindow {
  from?: string;
  to?: string;
}

/** The window asked for, [from, to) of report start times: default the 7 days before now; at most 90 days. */
export const dmarcWindow = (q: DmarcWindow, now: number) => timeWindow(q, now, 7 * DAY_MS);

const rate = (a: number, b: number) => (b > 0 ? Math.min(1, Math.round((a / b) * 1e6) / 1e6) : 0);
/** One spelling per address (IPv6 in lower case), so `2001:DB8::10` and `2001:db8::10` are one source. */
const canonical = (ip: string) => (isIP(ip) === 6 ? ip.toLowerCase() : ip);

/** This service's sending IPs: MTA_SENDING_IPS and every MTA_IP_POOLS address. */
export function ourIps(ctx: Ctx): (ip: string) => boolean {
  const list = new BlockList();
  for (const { ip } of configuredIps(ctx.config)) if (isIP(ip)) list.addAddress(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4');
  return (ip) => isIP(ip) !== 0 && list.check(ip, isIP(ip) === 6 ? 'ipv6' : 'ipv4');
}

/** Per source (largest first), without reverse DNS: the store's (source, reporter) sums folded. */
function* sourcesOf(ctx: Ctx, domainId: string, from: number, to: number): Gen<Omit<DmarcSource, 'reverse_dns'>[]> {
  const ours = ourIps(ctx);
  const by = new Map<string, Omit<DmarcSource, 'reverse_dns'>>();
  for (const r of yield* store.dmarcSources(ctx.db, domainId, from, to)) {
    const ip = canonical(r.source_ip);
    let s = by.get(ip);
    if (!s) {
      const disposition = { none: 0, quarantine: 0, reject: 0 };
      const zero = { messages: 0, dmarc_pass: 0, dkim_aligned: 0, spf_aligned: 0 };
      s = { source_ip: ip, ours: ours(ip), ...zero, disposition, reporters: [] };
      by.set(ip, s);
    }
    s.messages += Number(r.messages);
    s.dmarc_pass += Number(r.dmarc_pass);
    s.dkim_aligned += Number(r.dkim_aligned);
    s.spf_aligned += Number(r.spf_aligned);
    s.disposition.none += Number(r.disp_none);
    s.disposition.quarantine += Number(r.disp_quarantine);
    s.disposition.reject += Number(r.disp_reject);
    if (!s.reporters.includes(r.org_name)) s.reporters.push(r.org_name);
  }
  const out = [...by.values()];
  for (const s of out) s.reporters.sort();
  return out.sort((a, b) => b.messages - a.messages || a.source_ip.localeCompare(b.source_ip));
}

/** The summary of a domain row's reports beginning in [from, to) (the API, the dashboard and `mta dmarc`). */
export async function summaryOf(ctx: Ctx, d: DomainRow, from: number, to: number): Promise<DmarcSummary> {
  const [totals, bare] = await runPlan(
    ctx.db,
    (function* () {
      return [yield* store.dmarcReportTotals(ctx.db, d.id, from, to), yield* sourcesOf(ctx, d.id, from, to)] as const;
    })(),
  );
  const names = await reverseDnsFor(ctx.config).names(bare.map((s) => s.source_ip));
  const sources = bare.map(({ source_ip, ...s }, i) => ({ source_ip, reverse_dns: names[i], ...s }));
  const sum = (k: 'messages' | 'dmarc_pass' | 'dkim_aligned' | 'spf_aligned') => sources.reduce((a, s) => a + s[k], 0);
  const messages = sum('messages');
  return {
    object: 'dmarc_summary',
    domain: d.name,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    reports: Number(totals.reports ?? 0),
    unauthenticated_reports: Number(totals.unauthenticated ?? 0),
    messages,
    dmarc_pass_rate: rate(sum('dmarc_pass'), messages),
    dkim_aligned_rate: rate(sum('dkim_aligned'), messages),
    spf_aligned_rate: rate(sum('spf_aligned'), messages),
    sources,
  };
}

/** GET /v1/domains/{id}/dmarc: a team's domain (404 for another team's). */
export async function getDmarcSummary(
  ctx: Ctx,
  teamId: string,
  domainId: string,
  q: DmarcWindow,
): Promise<DmarcSummary> {
  const d = await runPlan(ctx.db, owned(ctx, teamId, domainId));
  const { from, to } = dmarcWindow(q, ctx.now());
  return summaryOf(ctx, d, from, to);
}

/** Messages and the DMARC pass rate per UTC day of the window (days without reports: 0 and 0). */
function* dmarcByDay(ctx: Ctx, domainId: string, from: number, to: number) {
  const rows = new Map((yield* store.dmarcDays(ctx.db, domainId, from, to)).map((r) => [Number(r.day), r]));
  const out: { day: string; messages: number; dmarc_pass_rate: number }[] = [];
  for (let t = Math.floor(from / DAY_MS) * DAY_MS; t < to; t += DAY_MS) {
    const r = rows.get(t);
    const messages = Number(r?.messages ?? 0);
    out.push({
      day: new Date(t).toISOString().slice(0, 10),
      messages,
      dmarc_pass_rate: rate(Number(r?.dmarc_pass ?? 0), messages),
    });
  }
  return out;
}

/** The dashboard's view of a team's domain: the summary and the pass rate by day, the last `days` UTC days. */
export async function dmarcView(ctx: Ctx, teamId: string, domainId: string, days: number) {
  const d = await runPlan(ctx.db, owned(ctx, teamId, domainId));
  const to = ctx.now();
  const from = Math.floor(to / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
  return { summary: await summaryOf(ctx, d, from, to), days: await runPlan(ctx.db, dmarcByDay(ctx, d.id, from, to)) };
}

export const presentDmarcReport = (r: DmarcReportRow) => ({
  object: 'dmarc_report' as const,
  id: r.id,
  org_name: r.org_name,
  report_id: r.report_id,
  begin: new Date(Number(r.begin_at)).toISOString(),
  end: new Date(Number(r.end_at)).toISOString(),
  records: Number(r.records),
  messages: Number(r.messages),
  authenticated: r.authenticated === null ? null : Number(r.authenticated) === 1,
  authenticated_by: r.authenticated_by,
});

/** GET /v1/domains/{id}/dmarc/reports: the domain's reports, newest received first, a page at a time. */
export async function listDmarcReports(ctx: Ctx, teamId: string, domainId: string, limit: number, cursor?: string) {
  const d = await runPlan(ctx.db, owned(ctx, teamId, domainId));
  const before = await runPlan(ctx.db, decodeCursor(ctx.db, 'dmr', cursor));
  const rows = await runPlan(
    ctx.db,
    store.dmarcReportsOfDomain(ctx.db, d.id, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, before, limit + 1),
  );
  return runPlan(ctx.db, page(ctx.db, 'dmr', rows, limit, presentDmarcReport));
}

/** `mta dmarc --domain NAME`: the team domain of that name (a verified one first, then the oldest). */
export async function domainNamedForCli(ctx: Ctx, name: string): Promise<DomainRow> {
  const rows = await runPlan(ctx.db, domainsNamed(ctx.db, name.toLowerCase().replace(/\.$/, '')));
  const d = rows.find((r) => r.status === 'verified') ?? rows[0];
  if (!d) throw notFound('domain');
  return d;
}
