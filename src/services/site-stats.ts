// Statistics by provider (decisions.md "Statistics by provider"): per team, mode, hour and site (as `mta sites` names
// it), what happened to the recipients there, counted by the transition writer as it writes each recipient's change
// (counters, never a scan of emails), and GET /v1/stats/sites, which sums the hours asked for.
import type { RecipientEvent, Status } from '../core/status.js';
import * as store from '../store/stats.js';
import type { Ctx } from './context.js';
import type { CounterTally } from './counter-tally.js';
import type { Owner } from './keys.js';
import { HOUR_MS, rate, rates, statsMode, statsRange, type StatsQuery } from './stats.js';
import { runPlan, type Gen } from '../store/op.js';
import { isPg, txMemoed, txRemember } from '../store/db.js';

/** The site of test-mode recipients: their outcomes are simulated, no site is ever reached. */
export const SIMULATED_SITE = 'simulated';
export const SITE_FIGURES = ['sent', 'delivered', 'delivery_delayed', 'bounced', 'complained', 'deferrals'] as const;
type Figure = (typeof SITE_FIGURES)[number] | 'attempts';

export interface SiteStats extends Record<(typeof SITE_FIGURES)[number], number> {
  object: 'site_stats';
  site: string;
  bounce_rate: number;
  complaint_rate: number;
  deferral_rate: number;
  median_delivery_seconds: number | null;
}

/**
 * The accept-to-delivered histogram: bucket 0 holds [0, 1) s, bucket k ≥ 1 holds [2^((k-1)/4), 2^(k/4)) s (four
 * buckets per doubling: each about 19% wide), the last one everything from 2^(MAX-1)/4 s (≈ 10 days) on.
 */
export const DELAY_BUCKETS = 80;
export function delayBucket(seconds: number): number {
  if (!(seconds >= 1)) return 0;
  return Math.min(DELAY_BUCKETS, 1 + Math.floor(4 * Math.log2(seconds)));
}
const bucketLow = (k: number) => (k === 0 ? 0 : 2 ** ((k - 1) / 4));
const bucketHigh = (k: number) => (k === 0 ? 1 : 2 ** (k / 4));

/**
 * The median of a histogram (bucket → count): interpolated linearly inside the bucket holding the middle recipient,
 * so within that bucket's width of the exact one (under 1 s below one second, under 19% above). Null when empty.
 */
export function histogramMedian(buckets: ReadonlyMap<number, number>): number | null {
  const total = [...buckets.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const half = total / 2;
  let seen = 0;
  for (const k of [...buckets.keys()].sort((a, b) => a - b)) {
    const n = buckets.get(k)!;
    if (seen + n >= half) {
      const at = bucketLow(k) + ((half - seen) / n) * (bucketHigh(k) - bucketLow(k));
      return Math.round(at * 10) / 10;
    }
    seen += n;
  }
  return null;
}

/** One recipient's change written by applyOutcomes: from what, to what, by which event. */
export interface SiteChange {
  domain: string;
  from: Status;
  to: Status;
  event: RecipientEvent;
  /** where the delivery loop took it, if it did */
  site?: string;
}
interface Counted {
  team_id: string;
  test_mode: number;
  created_at: number;
  scheduled_at: number | null;
}

/** The site's answers to an attempt; any other event given a site is not an attempt there. */
const ANSWERS: ReadonlySet<RecipientEvent> = new Set(['accepted', 'deferred', 'rejected', 'expired']);
/** Events counted at the recipient domain's site even when the writer does not name it (feedback comes later). */
const LATER: ReadonlySet<RecipientEvent> = new Set(['complaint', 'async_bounce', 'expired']);

/** The figures one change adds: a recipient is sent on its first answer, delayed on its first deferral. */
function figuresOf(c: SiteChange, answered: boolean): Figure[] {
  const f: Figure[] = [];
  if (answered) {
    f.push('attempts');
    if (c.from === 'queued') f.push('sent');
    if (c.event === 'deferred' || c.event === 'expired') f.push('deferrals');
  }
  if (c.to === 'delivery_delayed' && c.from !== 'delivery_delayed') f.push('delivery_delayed');
  if (c.to === 'delivered' && c.from !== 'delivered') f.push('delivered');
  if (c.to === 'bounced' || c.event === 'async_bounce') f.push('bounced');
  if (c.event === 'complaint') f.push('complained');
  return f;
}

const domainSites = new WeakMap<Ctx['db'], Map<string, { site: string; at: number }>>();
/**
 * Remembers the site the loop delivered a domain's mail to: written when it moves, and at most once a day otherwise
 * (its `seen_at` keeps it from the retention pass, services/retention.ts DOMAIN_SITE_KEEP_DAYS).
 */
function* noteSite(ctx: Ctx, domain: string, site: string): Gen<void> {
  // A transaction on the PostgreSQL pool may be rolled back and run again (docs/async-store.md "Session 20"): what it
  // wrote is not known committed here, so it is remembered for that transaction only, and written once in each.
  if (isPg(ctx.db) && ctx.db.scope) {
    if (txMemoed(ctx.db, `site ${domain}`)?.value === site) return;
    txRemember(ctx.db, `site ${domain}`, site);
    yield* store.noteDomainSite(ctx.db, domain, site, ctx.now());
    return;
  }
  let m = domainSites.get(ctx.db);
  if (!m) domainSites.set(ctx.db, (m = new Map()));
  const now = ctx.now();
  const known = m.get(domain);
  if (known?.site === site && now - known.at < 86_400_000) return;
  if (m.size >= 100_000) m.clear();
  m.set(domain, { site, at: now });
  yield* store.noteDomainSite(ctx.db, domain, site, now);
}

/**
 * Counts the recipient changes applyOutcomes wrote for one email, at their site (the delivery loop's, or the simulated
 * one in test mode) or, for a complaint, late bounce or expiry without one, at the site of the recipient's domain.
 * Inside the writing transaction; with `tally` (a batch of results), summed there and written with the batch.
 */
export function* countSiteChangesPlan(
  ctx: Ctx,
  email: Counted,
  changes: readonly SiteChange[],
  tally?: CounterTally,
): Gen<void> {
  if (!changes.length) return;
  const now = ctx.now();
  const sum = new Map<string, Map<string, number>>();
  const add = (s: string, type: string) => {
    let m = sum.get(s);
    if (!m) sum.set(s, (m = new Map()));
    m.set(type, (m.get(type) ?? 0) + 1);
  };
  for (const c of changes) {
    const given = c.site ?? (email.test_mode === 1 ? SIMULATED_SITE : undefined);
    if (given && given !== SIMULATED_SITE && ANSWERS.has(c.event)) yield* noteSite(ctx, c.domain, given);
    const at = given ?? (LATER.has(c.event) ? yield* store.siteOfDomain(ctx.db, c.domain) : undefined);
    if (!at) continue;
    for (const f of figuresOf(c, given !== undefined && ANSWERS.has(c.event))) add(at, f);
    if (c.to === 'delivered' && c.from !== 'delivered') {
      const since = Math.max(email.created_at, email.scheduled_at ?? 0);
      add(at, `d${delayBucket((now - since) / 1000)}`);
    }
  }
  const key = { teamId: email.team_id, testMode: email.test_mode, hour: Math.floor(now / HOUR_MS) * HOUR_MS };
  for (const [s, m] of sum)
    for (const [type, n] of m)
      if (tally) tally.siteStat({ ...key, site: s }, type, n);
      else yield* store.bumpSiteStat(ctx.db, { ...key, site: s }, type, n);
}

/** GET /v1/stats/sites: each site's figures over [from, to) (whole hours), by sent, largest first. */
export const getSiteStats = (ctx: Ctx, owner: Owner, q: Omit<StatsQuery, 'granularity'>) =>
  runPlan(ctx.db, siteStatsPlan(ctx, owner, q));

function* siteStatsPlan(ctx: Ctx, owner: Owner, q: Omit<StatsQuery, 'granularity'>) {
  const { from, to } = statsRange(q, ctx.now());
  const mode = statsMode(owner, q.test_mode);
  const rows =
    mode === null
      ? []
      : yield* store.siteFiguresBetween(ctx.db, owner.teamId, mode, Math.floor(from / HOUR_MS) * HOUR_MS, to);
  const bySite = new Map<string, { n: Map<string, number>; delays: Map<number, number> }>();
  for (const r of rows) {
    let s = bySite.get(r.site);
    if (!s) bySite.set(r.site, (s = { n: new Map(), delays: new Map() }));
    if (/^d\d+$/.test(r.type)) s.delays.set(Number(r.type.slice(1)), r.n);
    else s.n.set(r.type, r.n);
  }
  const data = [...bySite].map(([site, s]): SiteStats => {
    const f = Object.fromEntries(SITE_FIGURES.map((k) => [k, s.n.get(k) ?? 0])) as Record<Figure, number>;
    return {
      object: 'site_stats',
      site,
      ...f,
      ...rates(f),
      deferral_rate: rate(f.deferrals, s.n.get('attempts') ?? 0),
      median_delivery_seconds: histogramMedian(s.delays),
    };
  });
  data.sort((a, b) => b.sent - a.sent || a.site.localeCompare(b.site));
  return { object: 'list' as const, data };
}
