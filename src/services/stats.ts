// Delivery insight: counts emails reaching each status (and first opened / clicked) per team, mode and hour
// inside the writing transaction, per-site attempt outcomes for the Delivery page, and reads them as buckets.
import { invalid } from '../core/errors.js';
import { EVENT_TYPES, type EventType, type RecipientEvent, type Status } from '../core/status.js';
import { hasEventOfType } from '../store/events.js';
import * as store from '../store/stats.js';
import type { Ctx } from './context.js';
import type { CounterTally } from './counter-tally.js';
import type { Owner } from './keys.js';
import { runPlan, type Gen } from '../store/op.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
export const MAX_RANGE_MS = 90 * DAY_MS;
/** The statuses counted, in the order of the API's buckets (decisions.md "Statistics"): every event type but `queued`. */
export type StatType = Exclude<EventType, 'queued'>;
export const STAT_TYPES: readonly StatType[] = EVENT_TYPES.filter((t): t is StatType => t !== 'queued');
export type Counts = Record<StatType, number>;
export interface Bucket extends Counts {
  start: string;
}
export interface Stats {
  object: 'stats';
  granularity: 'hour' | 'day';
  from: string;
  to: string;
  test_mode: boolean;
  data: Bucket[];
  totals: Counts & { bounce_rate: number; complaint_rate: number };
}

const COUNTED: ReadonlySet<string> = new Set(STAT_TYPES);
const hourOf = (t: number) => Math.floor(t / HOUR_MS) * HOUR_MS;
interface Counted {
  team_id: string;
  test_mode: number;
  seq: number;
}

// The counters below run inside the writing transaction as plans (`yield*`: services/transition.ts, result-batch.ts).

/**
 * Counts an email's status changes (the path applyOutcomes took). Inside the writing transaction; with `tally` (a batch
 * of results), summed there and written with the batch.
 */
export function* countStatusChangesPlan(
  ctx: Ctx,
  email: Counted,
  path: readonly Status[],
  tally?: CounterTally,
): Gen<void> {
  const hour = hourOf(ctx.now());
  for (const s of path) {
    if (!COUNTED.has(s)) continue;
    if (tally) tally.stat({ teamId: email.team_id, testMode: email.test_mode, hour }, s);
    else yield* store.bumpStat(ctx.db, email.team_id, email.test_mode, hour, s);
  }
}

/** A late (asynchronous) bounce of a delivered email: its status stays, but it counts as bounced, once. */
export function* countLateBouncePlan(ctx: Ctx, email: Counted): Gen<void> {
  if (yield* hasEventOfType(ctx.db, email.seq, 'bounced')) return;
  yield* store.bumpStat(ctx.db, email.team_id, email.test_mode, hourOf(ctx.now()), 'bounced');
}

/** Before an `opened` / `clicked` event is appended: counts the email the first time it has one. */
export function* countEngagementPlan(ctx: Ctx, email: Counted, type: EventType): Gen<void> {
  if (type !== 'opened' && type !== 'clicked') return;
  if (yield* hasEventOfType(ctx.db, email.seq, type)) return;
  yield* store.bumpStat(ctx.db, email.team_id, email.test_mode, hourOf(ctx.now()), type);
}

const SITE_KIND: Partial<Record<RecipientEvent, string>> = {
  accepted: 'delivered',
  deferred: 'deferred',
  rejected: 'bounced',
  expired: 'bounced',
};
/** Site counters are kept this long (the Delivery page shows the last 24 hours). */
const SITE_KEEP_MS = 48 * HOUR_MS;
const pruned = new WeakMap<Ctx['db'], number>();

/** Counts one site's attempt outcomes (delivery loop, inside the result transaction, or into the batch's `tally`); prunes once an hour. */
export function* countSiteOutcomesPlan(
  ctx: Ctx,
  site: string,
  events: readonly RecipientEvent[],
  tally?: CounterTally,
): Gen<void> {
  const hour = hourOf(ctx.now());
  const n = new Map<string, number>();
  for (const e of events) {
    const kind = SITE_KIND[e];
    if (kind) n.set(kind, (n.get(kind) ?? 0) + 1);
  }
  for (const [kind, k] of n)
    if (tally) tally.site(site, hour, kind, k);
    else yield* store.bumpSite(ctx.db, site, hour, kind, k);
  if (pruned.get(ctx.db) !== hour) {
    yield* store.pruneSiteStats(ctx.db, hour - SITE_KEEP_MS);
    pruned.set(ctx.db, hour);
  }
}

export interface SiteSeries {
  site: string;
  hours: number[];
  delivered: number[];
  deferred: number[];
  bounced: number[];
}

/** Per site with any outcome in the last `hours` hours: hourly series (oldest first, the current hour last). */
export const siteSeries = (ctx: Ctx, hours = 24): Promise<SiteSeries[]> => runPlan(ctx.db, siteSeriesPlan(ctx, hours));

function* siteSeriesPlan(ctx: Ctx, hours: number): Gen<SiteSeries[]> {
  const last = hourOf(ctx.now());
  const first = last - (hours - 1) * HOUR_MS;
  const out = new Map<string, SiteSeries>();
  for (const r of yield* store.siteStatsSince(ctx.db, first)) {
    let s = out.get(r.site);
    if (!s) {
      const zeros = () => new Array<number>(hours).fill(0);
      const hs = Array.from({ length: hours }, (_, i) => first + i * HOUR_MS);
      out.set(r.site, (s = { site: r.site, hours: hs, delivered: zeros(), deferred: zeros(), bounced: zeros() }));
    }
    const i = (r.hour - first) / HOUR_MS;
    if (i >= 0 && i < hours && (r.kind === 'delivered' || r.kind === 'deferred' || r.kind === 'bounced'))
      s[r.kind][i] += r.n;
  }
  return [...out.values()].sort((a, b) => a.site.localeCompare(b.site));
}

export const zeroCounts = (): Counts => Object.fromEntries(STAT_TYPES.map((t) => [t, 0])) as Counts;

/** a / b as a fraction between 0 and 1 to six places (0 when b is 0). */
export const rate = (a: number, b: number) => (b > 0 ? Math.min(1, Math.round((a / b) * 1e6) / 1e6) : 0);

/** Bounced per sent, complained per delivered: fractions between 0 and 1 (0 when nothing was sent). */
export function rates(c: Pick<Counts, 'bounced' | 'sent' | 'complained' | 'delivered'>) {
  return { bounce_rate: rate(c.bounced, c.sent), complaint_rate: rate(c.complained, c.delivered) };
}

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/i;
function parseTime(param: 'from' | 'to', s: string | undefined): number | null {
  if (s === undefined) return null;
  const t = ISO.test(s) ? Date.parse(s.length === 10 ? `${s}T00:00:00Z` : s) : NaN;
  if (Number.isNaN(t))
    throw invalid(param, `${param} must be an ISO 8601 date-time with a time zone (2026-01-31T09:00:00Z) or a date.`);
  return t;
}

export interface StatsQuery {
  from?: string;
  to?: string;
  granularity?: 'hour' | 'day';
  test_mode?: 'true' | 'false';
}

/** A window [from, to) asked for: `span` before now (or from `from`) by default, checked (422 naming the param). */
export function timeWindow(q: { from?: string; to?: string }, now: number, span: number): { from: number; to: number } {
  let to = parseTime('to', q.to);
  let from = parseTime('from', q.from);
  if (to === null) to = from === null ? now : Math.min(now, from + span);
  if (from === null) from = to - span;
  if (from >= to) throw invalid('from', 'from must be before to.');
  if (to - from > MAX_RANGE_MS) throw invalid('to', 'from and to may be at most 90 days apart.');
  return { from, to };
}

/** The range asked for: [from, to) with defaults (the last 24 hours), checked (422 naming the param). */
export function statsRange(q: StatsQuery, now: number): { from: number; to: number; granularity: 'hour' | 'day' } {
  const granularity = q.granularity ?? 'hour';
  return { ...timeWindow(q, now, granularity === 'day' ? 30 * DAY_MS : DAY_MS), granularity };
}

/** Which mode's counters an owner reads: a test key test mode only; a live key live, or test with test_mode=true. */
export function statsMode(owner: Owner, testMode: 'true' | 'false' | undefined): number | null {
  if (owner.mode === 'test') return testMode === 'false' ? null : 1;
  return testMode === 'true' ? 1 : 0;
}

/** GET /v1/stats: the team's counters in buckets of an hour or a UTC day (empty buckets included). */
export const getStats = (ctx: Ctx, owner: Owner, q: StatsQuery): Promise<Stats> =>
  runPlan(ctx.db, statsPlan(ctx, owner, q));

function* statsPlan(ctx: Ctx, owner: Owner, q: StatsQuery): Gen<Stats> {
  const { from, to, granularity } = statsRange(q, ctx.now());
  const size = granularity === 'day' ? DAY_MS : HOUR_MS;
  const first = Math.floor(from / size) * size;
  const buckets: Bucket[] = [];
  for (let t = first; t < to; t += size) buckets.push({ start: new Date(t).toISOString(), ...zeroCounts() });
  const mode = statsMode(owner, q.test_mode);
  const rows = mode === null ? [] : yield* store.statsBetween(ctx.db, owner.teamId, mode, hourOf(from), to);
  const totals = zeroCounts();
  for (const r of rows) {
    if (!COUNTED.has(r.type)) continue;
    const b = buckets[Math.floor((r.hour - first) / size)];
    if (!b) continue;
    b[r.type as StatType] += r.n;
    totals[r.type as StatType] += r.n;
  }
  return {
    object: 'stats',
    granularity,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    test_mode: mode === 1,
    data: buckets,
    totals: { ...totals, ...rates(totals) },
  };
}
