// TLS reporting (RFC 8460; docs/outbound.md "TLS reporting"): each delivery attempt's TLS outcome counted per
// recipient policy domain and UTC day (inside the delivery loop's result transaction, no round trip of its own), and
// a domain's day read back as the RFC 8460 JSON report (`mta tls-report`, and what MTA_TLSRPT=on sends).
import { runPlan, type Gen } from '../store/op.js';
import * as store from '../store/tls-reports.js';
import type { Ctx } from './context.js';
import { cachedSts, normalDomain } from './tls-policy.js';

export const DAY_MS = 86_400_000;
/** Counters (and sent marks) are kept this many days (the retention job). */
export const TLS_REPORT_KEEP_DAYS = 30;
const dayOf = (t: number) => Math.floor(t / DAY_MS) * DAY_MS;

/** What the delivery loop knows of an attempt's recipient domain and TLS plan (outbound/mta-sts.ts TlsPlan). */
export interface TlsTally {
  domain: string;
  mode?: 'enforce' | 'testing';
  mx?: readonly string[];
}
/** An attempt's event `details.tls` (outbound/outcome.ts AttemptTls), as the outcome carries it. */
interface TlsDetail {
  version: string | null;
  verified: boolean;
  policy: string;
  result_type?: string;
  /** DANE: the TLSA records applied (RFC 8460 policy-string), when the outcome names them */
  policy_strings?: string[];
}

const POLICY_TYPE: Record<string, string> = { 'mta-sts': 'sts', dane: 'tlsa' };

/**
 * Counts the TLS outcomes of one domain's attempts (`data` of each outcome: tls, mx_host, remote_ip, source_ip).
 * An attempt without a TLS session and without a failure type (connection refused, plain text with no policy) is
 * not a session RFC 8460 reports on. Inside the result transaction: one upsert per counter the whole batch touches.
 */
export function* countTlsOutcomesPlan(
  ctx: Ctx,
  items: readonly { tls?: TlsTally; outcomes: readonly { data: Record<string, unknown> }[] }[],
): Gen<void> {
  const day = dayOf(ctx.now());
  const n = new Map<string, { k: store.TlsCountKey; n: number }>();
  for (const { tls: t, outcomes } of items) if (t) for (const o of outcomes) tally(n, t, o.data, day);
  for (const { k, n: count } of n.values()) yield* store.bumpTlsCount(ctx.db, k, count);
}

function tally(
  n: Map<string, { k: store.TlsCountKey; n: number }>,
  t: TlsTally,
  data: Record<string, unknown>,
  day: number,
): void {
  const tls = data.tls as TlsDetail | undefined;
  if (!tls || (tls.version === null && !tls.result_type)) return;
  const type = POLICY_TYPE[tls.policy] ?? 'no-policy-found';
  const policy =
    type === 'sts'
      ? JSON.stringify({ mode: t.mode ?? 'enforce', mx: t.mx ?? [] })
      : type === 'tlsa'
        ? JSON.stringify({ tlsa: tls.policy_strings ?? [] })
        : '';
  const failed = tls.result_type ?? (type !== 'no-policy-found' && !tls.verified ? 'validation-failure' : '');
  const k: store.TlsCountKey = {
    domain: t.domain,
    day,
    policy_type: type,
    policy,
    result_type: failed,
    mx_host: String(data.mx_host ?? ''),
    receiving_ip: String(data.remote_ip ?? ''),
    sending_ip: String(data.source_ip ?? ''),
  };
  const key = JSON.stringify(k);
  const c = n.get(key);
  if (c) c.n++;
  else n.set(key, { k, n: 1 });
}

/** A domain's day's report (RFC 8460 §4), or null when nothing was sent to it that day. */
export async function tlsReport(ctx: Ctx, input: string, date: string): Promise<TlsReport | null> {
  const domain = normalDomain(input);
  const day = parseDay(date);
  const rows = await runPlan(ctx.db, store.tlsCountsOf(ctx.db, domain, day));
  if (rows.length === 0) return null;
  const sts = await cachedSts(ctx, domain);
  const org = ctx.config.hostname;
  const policies = new Map<string, TlsReportPolicy>();
  for (const r of rows) {
    const key = `${r.policy_type} ${r.policy}`;
    let p = policies.get(key);
    if (!p) policies.set(key, (p = newPolicy(domain, r, sts?.max_age)));
    if (r.result_type === '') p.summary['total-successful-session-count'] += r.n;
    else {
      p.summary['total-failure-session-count'] += r.n;
      p['failure-details'].push({
        'result-type': r.result_type,
        ...(r.sending_ip ? { 'sending-mta-ip': r.sending_ip } : {}),
        ...(r.mx_host ? { 'receiving-mx-hostname': r.mx_host } : {}),
        ...(r.receiving_ip ? { 'receiving-ip': r.receiving_ip } : {}),
        'failed-session-count': r.n,
      });
    }
  }
  const start = new Date(day).toISOString();
  return {
    'organization-name': org,
    'date-range': { 'start-datetime': start, 'end-datetime': new Date(day + DAY_MS - 1000).toISOString() },
    'contact-info': `postmaster@${org}`,
    'report-id': `${start.slice(0, 10)}_${domain}@${org}`,
    policies: [...policies.values()],
  };
}

export interface TlsReportPolicy {
  policy: { 'policy-type': string; 'policy-string': string[]; 'policy-domain': string; 'mx-host': string[] };
  summary: { 'total-successful-session-count': number; 'total-failure-session-count': number };
  'failure-details': Record<string, string | number>[];
}
export interface TlsReport {
  'organization-name': string;
  'date-range': { 'start-datetime': string; 'end-datetime': string };
  'contact-info': string;
  'report-id': string;
  policies: TlsReportPolicy[];
}

function newPolicy(domain: string, r: store.TlsCountRow, maxAge: number | undefined): TlsReportPolicy {
  const parsed = r.policy ? (JSON.parse(r.policy) as { mode?: string; mx?: string[]; tlsa?: string[] }) : {};
  const strings =
    r.policy_type === 'sts'
      ? [
          'version: STSv1',
          `mode: ${parsed.mode}`,
          ...(parsed.mx ?? []).map((m) => `mx: ${m}`),
          ...(maxAge !== undefined ? [`max_age: ${maxAge}`] : []),
        ]
      : (parsed.tlsa ?? []);
  return {
    policy: {
      'policy-type': r.policy_type,
      'policy-string': strings,
      'policy-domain': domain,
      'mx-host': r.policy_type === 'sts' ? (parsed.mx ?? []) : [],
    },
    summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 0 },
    'failure-details': [],
  };
}

/** A YYYY-MM-DD UTC day's start (ms), or an Error. */
export function parseDay(date: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  const t = m ? Date.UTC(+m[1], +m[2] - 1, +m[3]) : NaN;
  if (!m || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== date)
    throw new Error(`not a date (YYYY-MM-DD): ${date}`);
  return t;
}

/** Drops counters older than TLS_REPORT_KEEP_DAYS (the retention job). */
export const pruneTlsReportsPlan = (ctx: Ctx) =>
  store.pruneTlsReports(ctx.db, dayOf(ctx.now()) - TLS_REPORT_KEEP_DAYS * DAY_MS);

/** Domains' recent TLS failures (the Delivery page): per domain and result type, the last `days` days. */
export const recentTlsFailures = (ctx: Ctx, days = 7) =>
  runPlan(ctx.db, store.tlsFailuresSince(ctx.db, dayOf(ctx.now()) - (days - 1) * DAY_MS));

/** The domains with traffic on `day` whose report was not sent yet (MTA_TLSRPT=on). */
export async function domainsToReport(ctx: Ctx, day: number): Promise<string[]> {
  const domains = await runPlan(ctx.db, store.tlsDomainsOf(ctx.db, day));
  const out: string[] = [];
  for (const d of domains)
    if ((await runPlan(ctx.db, store.tlsReportSentAt(ctx.db, d, day))) === undefined) out.push(d);
  return out;
}

/** Takes a domain's day for sending: false when another node (or an earlier run) already did. */
export const claimTlsReport = (ctx: Ctx, domain: string, day: number, rua: string) =>
  runPlan(ctx.db, store.noteTlsReportSent(ctx.db, domain, day, ctx.now(), rua));

/** The UTC day before `now`'s, as YYYY-MM-DD. */
export const yesterday = (now: number) => new Date(dayOf(now) - DAY_MS).toISOString().slice(0, 10);

export interface TlsPolicyView {
  domain: string;
  /** the cached MTA-STS policy's mode (null: none cached) and mx patterns */
  mode: string | null;
  mx: string[];
  expires_at: string | null;
  override: string | null;
  /** failed sessions of the last 7 days by RFC 8460 result type */
  failures: Record<string, number>;
  failed: number;
}
/** The Delivery page's TLS policies: domains with a policy or override, and any domain with recent TLS failures. */
export async function tlsPolicyOverview(ctx: Ctx, limit = 200): Promise<TlsPolicyView[]> {
  const [policies, failures] = await Promise.all([
    runPlan(ctx.db, store.tlsPolicyList(ctx.db, limit)),
    recentTlsFailures(ctx, 7),
  ]);
  const out = new Map<string, TlsPolicyView>();
  for (const p of policies)
    out.set(p.domain, {
      domain: p.domain,
      mode: p.mode || null,
      mx: JSON.parse(p.mx_json) as string[],
      expires_at: p.mode ? new Date(p.expires_at).toISOString() : null,
      override: p.override,
      failures: {},
      failed: 0,
    });
  for (const f of failures) {
    let v = out.get(f.domain);
    if (!v)
      out.set(
        f.domain,
        (v = { domain: f.domain, mode: null, mx: [], expires_at: null, override: null, failures: {}, failed: 0 }),
      );
    v.failures[f.result_type] = f.n;
    v.failed += f.n;
  }
  return [...out.values()].sort((a, b) => b.failed - a.failed || a.domain.localeCompare(b.domain));
}
