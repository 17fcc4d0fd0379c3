// Delivery control for operators (operations.md "Delivery control"): `mta sites`, `mta site suspend|resume`,
// `mta ip list`, `mta ip warmup` read what the running loop stored and queue intentions it applies within a second.
import { isIP } from 'node:net';
import type { Ctx } from './context.js';
import { shapingFor } from './shaping.js';
import { lightTx } from '../store/queue.js';
import * as dc from '../store/delivery-control.js';
import { runPlan, runSync, synced, transaction, type Gen } from '../store/op.js';
import { locksOnPool, runLocking, runPooled } from '../store/pg/plan-driver.js';
import { ipHolds } from '../store/ip-health.js';
import { capToday, utcDay, warmupDay } from '../core/shaping/warmup.js';
import { parseRate } from '../core/shaping/rules.js';

// The delivery loop's controller (outbound/control.ts): what it reads at start, synchronously (restore).
export const pendingCommands = synced(dc.pendingCommands);
export const markApplied = synced(dc.markApplied);
export const storedLanes = synced(dc.lanes);

/** What the controller's tick reads of the store, once a second. */
export interface ControlReads {
  commands: dc.CommandRow[];
  warmups: dc.WarmupRow[];
  holds: Map<string, string>;
  lanes: dc.LaneRow[];
}
function* controlReadsPlan(db: Ctx['db']): Gen<ControlReads> {
  return {
    commands: yield* dc.pendingCommands(db),
    warmups: yield* dc.warmups(db),
    holds: yield* ipHolds(db),
    lanes: yield* dc.lanes(db),
  };
}
/**
 * The tick's reads, awaited: on PostgreSQL with a pool on a connection of its own (four single statements; the event
 * loop goes on), elsewhere at once underneath (SQLite, no pool).
 */
export const controlReads = (ctx: Pick<Ctx, 'db'>): Promise<ControlReads> =>
  runPooled(ctx.db, controlReadsPlan(ctx.db), 'other');

/** The sites' rows (a resumed site's domains set aside in the store), awaited as controlReads. */
export const storedSitesAsync = (ctx: Pick<Ctx, 'db'>): Promise<dc.SiteRow[]> =>
  runPooled(ctx.db, dc.sites(ctx.db), 'other');

/** One of a tick's writes: a lane, a site's figures, a whole-site hold cleared, an operator command applied. */
export type ControlWrite =
  | { k: 'lane'; row: Omit<dc.LaneRow, 'updated_at'> }
  | { k: 'site'; row: Omit<dc.SiteRow, 'updated_at'> }
  | { k: 'clear'; site: string }
  | { k: 'applied'; id: number };

function* controlWritesPlan(db: Ctx['db'], writes: readonly ControlWrite[], now: number): Gen<void> {
  for (const w of writes)
    if (w.k === 'lane') yield* dc.upsertLane(db, w.row, now);
    else if (w.k === 'site') yield* dc.upsertSite(db, w.row, now);
    else if (w.k === 'clear') yield* dc.deleteLane(db, w.site, '*');
    else yield* dc.markApplied(db, w.id, now);
}

/**
 * Writes a tick's rows, in the order the tick made them, in one transaction committed without waiting for its WAL
 * flush (lightTx's bargain: the rows are written again next second). PostgreSQL with MTA_PG_POOLED_TURNS on: on the
 * pool (runLocking), the event loop free meanwhile; otherwise in a lightTx on the synchronous connection, as before
 * (answered at once).
 */
export function writeControl(ctx: Pick<Ctx, 'db'>, writes: readonly ControlWrite[], now: number): Promise<void> {
  const db = ctx.db;
  if (!writes.length) return Promise.resolve();
  if (locksOnPool(db))
    return runLocking(
      db,
      transaction(db, () => controlWritesPlan(db, writes, now)),
      { durable: false, kind: 'other' },
    );
  try {
    lightTx(db, () => runSync(controlWritesPlan(db, writes, now)));
    return Promise.resolve();
  } catch (err) {
    return Promise.reject(err as Error);
  }
}

export class ControlError extends Error {}

export interface IpState {
  ip: string;
  state: 'open' | 'throttled' | 'suspended';
  until: string | null;
  reason: string | null;
  rate: string | null;
}
export interface SiteView {
  site: string;
  mx: string[];
  queued: number;
  in_flight: number;
  sent_last_hour: number;
  limits: { connections: number; messages_per_connection: number; rate: string | null };
  ips: IpState[];
}

/** Every source IP of the configuration with its pool (`default`: MTA_SENDING_IPS, or the kernel's choice). */
export function configuredIps(config: Ctx['config']): { ip: string; pool: string }[] {
  const out = new Map<string, string>();
  for (const [team, ips] of Object.entries(config.ipPools))
    for (const ip of ips) if (isIP(ip) && !out.has(ip)) out.set(ip, team);
  const sending = config.sendingIps.filter((ip) => isIP(ip) !== 0);
  for (const ip of sending) if (!out.has(ip)) out.set(ip, 'default');
  if (sending.length === 0) out.set('default', 'default');
  return [...out].map(([ip, pool]) => ({ ip, pool }));
}

/** An effective rate (messages per ms) in the unit of the configured rate ("60/min" halved → "30/min"). */
function rateText(perMs: number | null, configured: string | null): string | null {
  if (perMs === null || configured === null) return null;
  const unit = configured.split('/')[1];
  const n = perMs / (parseRate(`1/${unit}`) as number);
  return `${Number(n.toPrecision(3))}/${unit}`;
}

function* knownSites(ctx: Ctx): Gen<string[]> {
  const names = new Set(shapingFor(ctx.config).sites.map((s) => s.name));
  for (const s of yield* dc.sites(ctx.db)) names.add(s.site);
  for (const l of yield* dc.lanes(ctx.db)) names.add(l.site);
  return [...names];
}

/** The object `mta sites` prints for one site, with pending operator commands shown as applied. */
function* siteView(ctx: Ctx, site: string): Gen<SiteView> {
  const now = ctx.now();
  const shaping = shapingFor(ctx.config);
  const rule = shaping.sites.find((s) => s.name === site);
  const limits = shaping.limitsOf(site);
  const row = (yield* dc.sites(ctx.db)).find((s) => s.site === site);
  const lanes = (yield* dc.lanes(ctx.db)).filter((l) => l.site === site);
  const hold = lanes.find((l) => l.ip === '*' && (l.until === null || l.until > now));
  const held = yield* ipHolds(ctx.db);
  const ipNames = [
    ...new Set([...configuredIps(ctx.config).map((x) => x.ip), ...lanes.filter((l) => l.ip !== '*').map((l) => l.ip)]),
  ];
  const ips: IpState[] = ipNames.map((ip) => {
    const l = lanes.find((x) => x.ip === ip);
    const stale = l?.reason?.startsWith('dnsbl:') && !held.has(ip); // a DNSBL hold released since it was written
    const live = l && !stale && l.state !== 'open' && (l.state !== 'suspended' || l.until === null || l.until > now);
    if (live)
      return {
        ip,
        state: l.state,
        until: l.until === null ? null : new Date(l.until).toISOString(),
        reason: l.reason,
        rate: rateText(l.rate, limits.rate),
      };
    if (hold)
      return {
        ip,
        state: 'suspended',
        until: hold.until === null ? null : new Date(hold.until).toISOString(),
        reason: hold.reason,
        rate: limits.rate,
      };
    return { ip, state: 'open', until: null, reason: null, rate: limits.rate };
  });
  for (const c of (yield* dc.pendingCommands(ctx.db)).filter((x) => x.site === site)) {
    for (const s of ips.filter((x) => c.ip === null || x.ip === c.ip)) {
      if (c.kind === 'suspend')
        Object.assign(s, {
          state: 'suspended',
          until: c.seconds === null ? null : new Date(c.created_at + c.seconds * 1000).toISOString(),
          reason: c.reason ?? 'operator',
        });
      else Object.assign(s, { state: 'open', until: null, reason: null, rate: limits.rate });
    }
  }
  for (const s of ips) {
    const reason = held.get(s.ip);
    if (reason) Object.assign(s, { state: 'suspended', until: null, reason });
  }
  return {
    site,
    mx: rule ? [...rule.mx] : row ? (JSON.parse(row.mx_json) as string[]) : site.split(','),
    queued: row?.queued ?? 0,
    in_flight: row?.in_flight ?? 0,
    sent_last_hour: row?.sent_last_hour ?? 0,
    limits: {
      connections: limits.connections,
      messages_per_connection: limits.messages_per_connection,
      rate: limits.rate,
    },
    ips,
  };
}

export const listSites = (ctx: Ctx): Promise<SiteView[]> => runPlan(ctx.db, sitesPlan(ctx));
function* sitesPlan(ctx: Ctx): Gen<SiteView[]> {
  const out: SiteView[] = [];
  for (const s of yield* knownSites(ctx)) out.push(yield* siteView(ctx, s));
  return out;
}

function* checkSite(ctx: Ctx, site: string, ip: string | null): Gen<void> {
  if (!(yield* knownSites(ctx)).includes(site))
    throw new ControlError(`no site named ${JSON.stringify(site)} (see mta sites)`);
  if (
    ip !== null &&
    !configuredIps(ctx.config).some((x) => x.ip === ip) &&
    !(yield* dc.lanes(ctx.db)).some((l) => l.ip === ip)
  )
    throw new ControlError(`${ip} is not a source IP of this service (see mta ip list)`);
}

/** Queues an operator suspension or resumption; waits up to `waitMs` for the running loop to apply it. */
export async function siteCommand(
  ctx: Ctx,
  c: { kind: 'suspend' | 'resume'; site: string; ip: string | null; seconds: number | null; reason: string | null },
  waitMs = 2500,
): Promise<SiteView> {
  await runPlan(ctx.db, checkSite(ctx, c.site, c.ip));
  if (c.seconds !== null && (!Number.isInteger(c.seconds) || c.seconds < 1))
    throw new ControlError('--seconds is a whole number of seconds, 1 or more');
  const id = await runPlan(ctx.db, dc.addCommand(ctx.db, c, ctx.now()));
  const until = Date.now() + waitMs;
  while (Date.now() < until && !(await runPlan(ctx.db, dc.commandById(ctx.db, id)))?.applied_at)
    await new Promise((r) => setTimeout(r, 50));
  const view = await runPlan(ctx.db, siteView(ctx, c.site));
  return c.ip === null ? view : { ...view, ips: view.ips.filter((x) => x.ip === c.ip) };
}

export interface IpView {
  ip: string;
  pool: string;
  warmup: null | {
    started_at: string;
    day: number;
    caps_today: Record<string, number | null>;
    sent_today: Record<string, number>;
  };
}

function* ipView(ctx: Ctx, ip: string, pool: string): Gen<IpView> {
  const now = ctx.now();
  const w = (yield* dc.warmups(ctx.db)).find((x) => x.ip === ip);
  if (!w) return { ip, pool, warmup: null };
  const warm = { startedAt: w.started_at, startDay: w.start_day };
  const cap = capToday(shapingFor(ctx.config).warmup.schedule, warm, now);
  const sent: Record<string, number> = {};
  for (const l of yield* dc.lanes(ctx.db))
    if (l.ip === ip && l.day === utcDay(now) && l.sent_today > 0) sent[l.site] = l.sent_today;
  const caps = Object.fromEntries(
    [...new Set([...(yield* knownSites(ctx)), ...Object.keys(sent)])].map((s) => [s, cap]),
  );
  return {
    ip,
    pool,
    warmup: {
      started_at: new Date(w.started_at).toISOString(),
      day: warmupDay(warm, now),
      caps_today: caps,
      sent_today: sent,
    },
  };
}

export const listIps = (ctx: Ctx): Promise<IpView[]> => runPlan(ctx.db, ipsPlan(ctx));
function* ipsPlan(ctx: Ctx): Gen<IpView[]> {
  const out: IpView[] = [];
  for (const x of configuredIps(ctx.config)) out.push(yield* ipView(ctx, x.ip, x.pool));
  return out;
}

/** Starts (at `day`) or stops an IP's warm-up; the loop applies it within a second. */
export const warmupIp = (ctx: Ctx, ip: string, day: number, stop: boolean): Promise<IpView> =>
  runPlan(ctx.db, warmupPlan(ctx, ip, day, stop));
function* warmupPlan(ctx: Ctx, ip: string, day: number, stop: boolean): Gen<IpView> {
  const known = configuredIps(ctx.config).find((x) => x.ip === ip);
  if (!known) throw new ControlError(`${ip} is not a source IP of this service (see mta ip list)`);
  const len = shapingFor(ctx.config).warmup.schedule.length;
  if (!Number.isInteger(day) || day < 0 || day >= len) throw new ControlError(`--day is 0 to ${len - 1}`);
  yield* dc.setWarmup(ctx.db, ip, stop ? null : { started_at: ctx.now(), start_day: day });
  return yield* ipView(ctx, ip, known.pool);
}
