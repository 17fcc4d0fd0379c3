// Sending-IP health (operations.md "Deliverability insight"): for each sending IP (MTA_SENDING_IPS, MTA_IP_POOLS)
// its reverse name and whether that name resolves back to it (FCrDNS), its listing in each MTA_DNSBL_ZONES zone, and
// which verified domains of the teams sending from it have an SPF record that does not authorise it. The result is
// stored (ip_health) so `mta ips`, GET /admin/v1/ips and the dashboard read the last check. With
// MTA_DNSBL_ACTION=suspend a listed IP holds `dnsbl:<zone>`: the delivery loop suspends it on every site until a
// check finds it delisted. Every lookup goes through MTA_DNS_SERVERS with a one-try time-out and a deadline, so a
// slow zone costs at most LOOKUP_MS.
import { isIP } from 'node:net';
import type { Resolver } from 'node:dns/promises';
import type { Ctx } from './context.js';
import { createResolver, resolveAddresses } from './resolver.js';
import { ptrName } from './reverse-dns.js';
import { configuredIps } from './delivery-control.js';
import { evaluateSpf } from './dns-checks.js';
import { raiseIpAlert } from './alerts.js';
import * as store from '../store/ip-health.js';
import { runPlan, type Gen } from '../store/op.js';
import { dnsblQueryName, ipHealthState, judgeDnsbl, type IpHealthState, type Listing } from '../core/dnsbl.js';

const LOOKUP_MS = 3000;
const SPF_CONCURRENCY = 4;

export interface IpHealth {
  ip: string;
  pool: string;
  reverse_dns: string | null;
  fcrdns: boolean | null;
  listings: Listing[];
  spf_missing: string[];
  state: IpHealthState;
  checked_at: string | null;
}

/** A lookup that gives up (ETIMEOUT) after LOOKUP_MS even if the resolver's own time-out has not fired. */
function bounded<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('time-out'), { code: 'ETIMEOUT' })), LOOKUP_MS);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

const noData = (err: unknown) => ['ENOTFOUND', 'ENODATA'].includes((err as NodeJS.ErrnoException)?.code ?? '');

async function reverseName(resolver: Resolver, ip: string): Promise<{ name: string | null; fcrdns: boolean }> {
  const names = await bounded(resolver.reverse(ip)).catch(() => [] as string[]);
  const name = ptrName(names);
  if (!name) return { name: null, fcrdns: false };
  const back = await bounded(resolveAddresses(resolver, name)).catch(() => [] as string[]);
  return { name, fcrdns: back.some((a) => a.toLowerCase() === ip.toLowerCase()) };
}

async function listing(resolver: Resolver, ip: string, zone: string, before: Listing | undefined): Promise<Listing> {
  try {
    return judgeDnsbl(zone, await bounded(resolver.resolve4(dnsblQueryName(ip, zone))));
  } catch (err) {
    if (noData(err)) return { zone, listed: false, answer: null };
    const code = (err as NodeJS.ErrnoException)?.code ?? 'EUNKNOWN';
    return { zone, listed: before?.listed ?? false, answer: before?.answer ?? null, error: code };
  }
}

/** Names of the verified domains, sending from `pool`, whose SPF does not pass for `ip`. */
async function spfMissing(ctx: Ctx, resolver: Resolver, ip: string, pool: string): Promise<string[]> {
  const pools = ctx.config.ipPools;
  const poolOf = (d: { team_id: string; team_name: string }) =>
    Object.hasOwn(pools, d.team_id) ? d.team_id : Object.hasOwn(pools, d.team_name) ? d.team_name : 'default';
  const names = [
    ...new Set(
      (await runPlan(ctx.db, store.verifiedDomainTeams(ctx.db))).filter((d) => poolOf(d) === pool).map((d) => d.name),
    ),
  ];
  const missing = new Set<string>();
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const name = names[next++];
      const r = await bounded(evaluateSpf(resolver, name, ip, ctx.config.hostname)).catch(() => null);
      if (r?.status.result !== 'pass') missing.add(name);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SPF_CONCURRENCY, names.length) }, worker));
  return names.filter((n) => missing.has(n));
}

const present = (r: store.IpHealthRow): IpHealth => ({
  ip: r.ip,
  pool: r.pool,
  reverse_dns: r.reverse_dns,
  fcrdns: r.fcrdns === 1,
  listings: JSON.parse(r.listings_json) as Listing[],
  spf_missing: JSON.parse(r.spf_missing_json) as string[],
  state: r.state as IpHealthState,
  checked_at: new Date(r.checked_at).toISOString(),
});

/** The sending IPs of the configuration (plain addresses only). */
const sendingIps = (ctx: Ctx) => configuredIps(ctx.config).filter((x) => isIP(x.ip) !== 0);

/** The last check of every sending IP (`unchecked` for one never checked), as `mta ips` prints it. */
export async function ipHealth(ctx: Ctx): Promise<IpHealth[]> {
  const rows = new Map((await runPlan(ctx.db, store.ipHealthRows(ctx.db))).map((r) => [r.ip, r]));
  return sendingIps(ctx).map(({ ip, pool }) => {
    const r = rows.get(ip);
    if (r) return { ...present(r), pool };
    return {
      ip,
      pool,
      reverse_dns: null,
      fcrdns: null,
      listings: [],
      spf_missing: [],
      state: 'unchecked',
      checked_at: null,
    };
  });
}

/** Checks every sending IP now, stores the results (and the suspensions they imply), and returns them. */
export async function checkIps(ctx: Ctx): Promise<IpHealth[]> {
  const resolver = createResolver(ctx.config, { timeoutMs: LOOKUP_MS - 500, tries: 1 });
  const previous = new Map((await runPlan(ctx.db, store.ipHealthRows(ctx.db))).map((r) => [r.ip, r]));
  const suspend = ctx.config.dnsblAction === 'suspend';
  const rows = await Promise.all(
    sendingIps(ctx).map(async ({ ip, pool }): Promise<store.IpHealthRow> => {
      const before = previous.get(ip);
      const was = before ? (JSON.parse(before.listings_json) as Listing[]) : [];
      const [rdns, listings, missing] = await Promise.all([
        reverseName(resolver, ip),
        Promise.all(
          ctx.config.dnsblZones.map((z) =>
            listing(
              resolver,
              ip,
              z,
              was.find((l) => l.zone === z),
            ),
          ),
        ),
        spfMissing(ctx, resolver, ip, pool),
      ]);
      const listedIn = listings.find((l) => l.listed);
      return {
        ip,
        pool,
        reverse_dns: rdns.name,
        fcrdns: rdns.fcrdns ? 1 : 0,
        listings_json: JSON.stringify(listings),
        spf_missing_json: JSON.stringify(missing),
        state: ipHealthState({ fcrdns: rdns.fcrdns, listings, spfMissing: missing }, suspend),
        hold_reason: suspend && listedIn ? `dnsbl:${listedIn.zone}` : null,
        checked_at: ctx.now(),
      };
    }),
  );
  for (const r of rows) {
    await runPlan(ctx.db, writeAndAlert(ctx, r, previous.get(r.ip)));
    const held = previous.get(r.ip)?.hold_reason ?? null;
    if (r.hold_reason !== held)
      ctx.log.warn(
        { event: r.hold_reason ? 'ip_dnsbl_suspend' : 'ip_dnsbl_resume', ip: r.ip, reason: r.hold_reason ?? held },
        r.hold_reason ? `${r.ip} suspended on every site (${r.hold_reason})` : `${r.ip} delisted: resumed`,
      );
  }
  return rows.map(present);
}

/**
 * ip.alert events for what this check found against the last one: a new listing (`listed`, per zone), a zone that
 * no longer lists the IP (`delisted`), an IP without FCrDNS (`no_fcrdns`). Each once per 7 days (services/alerts.ts).
 */
function* writeAndAlert(ctx: Ctx, r: store.IpHealthRow, before: store.IpHealthRow | undefined): Gen<void> {
  yield* store.writeIpHealth(ctx.db, r);
  yield* alertChanges(ctx, r, before);
}

function* alertChanges(ctx: Ctx, r: store.IpHealthRow, before: store.IpHealthRow | undefined): Gen<void> {
  const now = JSON.parse(r.listings_json) as Listing[];
  const was = before ? (JSON.parse(before.listings_json) as Listing[]) : [];
  const at = { ip: r.ip, pool: r.pool };
  for (const l of now) {
    const had = was.find((w) => w.zone === l.zone)?.listed ?? false;
    if (l.listed && !had)
      yield* raiseIpAlert(ctx, { ...at, alert: 'listed', key: l.zone, details: { zone: l.zone, answer: l.answer } });
    if (!l.listed && had && !l.error)
      yield* raiseIpAlert(ctx, { ...at, alert: 'delisted', key: l.zone, details: { zone: l.zone } });
  }
  if (r.fcrdns !== 1) yield* raiseIpAlert(ctx, { ...at, alert: 'no_fcrdns', details: { reverse_dns: r.reverse_dns } });
}

/** IP → `dnsbl:<zone>` for the IPs a listing keeps suspended. */
export const ipHolds = (ctx: Ctx): Promise<Map<string, string>> => runPlan(ctx.db, store.ipHolds(ctx.db));
