// Delivery control of the running loop, once a second: applies the operator commands and warm-ups the CLI
// stored, writes per-(IP, site) state and per-site figures for `mta sites` / `mta ip list`, sets aside long-blocked
// queues, restores suspensions and warm-up counts at start; logs every reaction; mta_site_* / mta_ip_* metrics.
import { Registry, Gauge, Counter } from 'prom-client';
import type { Ctx } from '../services/context.js';
import * as store from '../services/delivery-control.js';
import type { ControlReads, ControlWrite } from '../services/delivery-control.js';
import { utcDay } from '../core/shaping/warmup.js';
import { wakeDomainsAsync } from '../services/delivery.js';
import type { OutboundLoop } from './loop.js';
import { outageLog } from '../services/store-health.js';

const STATE_VALUE = { open: 0, throttled: 1, suspended: 2 } as const;
/** A queue whose every IP is suspended longer than this goes back to the store until then. */
const SET_ASIDE_AFTER_MS = 5000;

export class Control {
  readonly registry = new Registry();
  private timer: NodeJS.Timeout | null = null;
  private hour = new Map<string, number[]>();
  private warm = new Set<string>();
  private ipHolds = new Map<string, string>();
  /** The tick on its way (stop() waits for it), and whether stop() was called. */
  private current: Promise<void> | null = null;
  private stopped = false;
  /** The lanes the last tick read (the sites whose lanes stop() writes). */
  private lanes: { site: string }[] = [];
  private m = {
    queued: new Gauge({
      name: 'mta_site_queued',
      help: 'Recipients waiting in memory for a site.',
      labelNames: ['site'],
      registers: [this.registry],
    }),
    inFlight: new Gauge({
      name: 'mta_site_in_flight',
      help: 'Transactions in progress to a site.',
      labelNames: ['site'],
      registers: [this.registry],
    }),
    sent: new Counter({
      name: 'mta_site_sent_total',
      help: 'Messages accepted by a site.',
      labelNames: ['site'],
      registers: [this.registry],
    }),
    reactions: new Counter({
      name: 'mta_site_reactions_total',
      help: 'Reply reactions by site, IP and action.',
      labelNames: ['site', 'ip', 'action'],
      registers: [this.registry],
    }),
    state: new Gauge({
      name: 'mta_ip_site_state',
      help: 'State of a (source IP, site): 0 open, 1 throttled, 2 suspended.',
      labelNames: ['ip', 'site'],
      registers: [this.registry],
    }),
    warmDay: new Gauge({
      name: 'mta_ip_warmup_day',
      help: 'Warm-up day of a warming source IP.',
      labelNames: ['ip'],
      registers: [this.registry],
    }),
    taken: new Counter({
      name: 'mta_outbound_taken_total',
      help: 'Recipients the delivery loop took in: by a claim from the store, or straight from their insert (intake).',
      labelNames: ['by'],
      registers: [this.registry],
      collect: () => {
        const st = this.loop.stats();
        this.m.taken.reset();
        this.m.taken.inc({ by: 'claim' }, st.claimed);
        this.m.taken.inc({ by: 'intake' }, st.intake);
      },
    }),
    lostResults: new Counter({
      name: 'mta_outbound_results_lost_total',
      help: "Delivery results not recorded: the recipient's claim had ended and been taken again (a send or result write outlasted its lease).",
      registers: [this.registry],
      collect: () => {
        this.m.lostResults.reset();
        this.m.lostResults.inc(this.loop.stats().lostResults);
      },
    }),
    sentToday: new Gauge({
      name: 'mta_ip_sent_today',
      help: 'Messages started today from a source IP to a site (UTC day).',
      labelNames: ['ip', 'site'],
      registers: [this.registry],
    }),
  };

  /** Store errors while its database is away: logged once per outage. */
  private readonly outage: ReturnType<typeof outageLog>;

  constructor(
    private ctx: Ctx,
    private loop: OutboundLoop,
  ) {
    this.outage = outageLog(ctx.log, 'delivery control');
  }

  start(): void {
    this.restore();
    this.current = this.tick();
  }

  /** No more ticks; once the one on its way is done, the lanes and sites are written one last time. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.current;
    try {
      const writes: ControlWrite[] = [];
      const now = this.ctx.now();
      this.persist(this.lanes, writes, now);
      await store.writeControl(this.ctx, writes, now);
    } catch (err) {
      this.ctx.log.error({ err: (err as Error).message }, 'delivery state not saved');
    }
  }

  /** A reply reaction happened: an event line and a metric. */
  reacted(ip: string, site: string, action: string, seconds: number, reply: string): void {
    this.m.reactions.inc({ site, ip, action });
    this.ctx.log.warn(
      { event: 'site_reaction', ip, site, action, seconds, reply: reply.slice(0, 200) },
      `site ${site} ${action === 'throttle' ? 'throttled' : action === 'blocklist' ? 'blocklisted' : 'suspended'} for ${ip}`,
    );
  }

  sent(site: string, now: number): void {
    this.m.sent.inc({ site });
    const b = this.hour.get(site) ?? new Array<number>(61).fill(0);
    b[Math.floor(now / 60_000) % 61]++;
    this.hour.set(site, b);
  }

  private sentLastHour(site: string, now: number): number {
    const b = this.hour.get(site);
    if (!b) return 0;
    const cur = Math.floor(now / 60_000);
    b[(cur + 1) % 61] = 0; // the bucket an hour old: reused next minute
    return b.reduce((a, x) => a + x, 0);
  }

  /**
   * Once a second: what the store says (operator commands, warm-ups, IP holds, the lanes written), applied; then
   * this loop's view written. Both awaited (PostgreSQL: on the pool; the event loop goes on), the next tick a second
   * after this one ends.
   */
  private async tick(): Promise<void> {
    try {
      const read = await store.controlReads(this.ctx);
      if (this.stopped) return;
      this.lanes = read.lanes;
      const now = this.ctx.now();
      const writes: ControlWrite[] = [];
      const resumed = this.applyCommands(read.commands, writes, now);
      this.applyWarmups(read.warmups);
      const released = this.applyIpHolds(read.holds);
      // Before this tick writes the sites' rows: a resumed site's domains set aside are read from its row first.
      if (resumed.length || released) await this.wake(released ? null : resumed, now);
      this.setAsideBlocked();
      this.persist(read.lanes, writes, now);
      this.loop.ready.prune();
      await store.writeControl(this.ctx, writes, now);
      this.outage.ok();
    } catch (err) {
      if (!this.outage.failed(err)) this.ctx.log.error({ err: (err as Error).message }, 'delivery control tick failed');
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.current = this.tick();
    }, 1000);
    this.timer.unref();
  }

  /** Suspensions (their time left) and today's warm-up counts from the store (after a restart). */
  private restore(): void {
    const now = this.ctx.now();
    for (const l of store.storedLanes(this.ctx.db)) {
      if (l.ip === '*') {
        if (l.state === 'suspended' && (l.until === null || l.until > now))
          this.loop.sched.suspendSite(
            l.site,
            [],
            l.until === null ? null : Math.ceil((l.until - now) / 1000),
            l.reason ?? 'operator',
            now,
          );
        continue;
      }
      if (l.day === utcDay(now) && l.sent_today > 0) this.loop.sched.setSentToday(l.ip, l.site, l.sent_today, now);
      // A DNSBL hold is not restored from the lane: ip_health says whether it still stands (applyIpHolds).
      if (l.state === 'suspended' && (l.until === null || l.until > now) && !l.reason?.startsWith('dnsbl:')) {
        const r = this.loop.sched.lane(l.ip, l.site).reaction;
        r.suspendedUntil = l.until ?? Infinity;
        r.reason = l.reason;
        r.blocklisted = l.blocklisted === 1;
      }
    }
    for (const c of store.pendingCommands(this.ctx.db))
      if (c.created_at < now - 86_400_000) store.markApplied(this.ctx.db, c.id, now);
  }

  /** The operator's commands applied; the sites resumed (their waiting mail to wake). */
  private applyCommands(commands: ControlReads['commands'], writes: ControlWrite[], now: number): string[] {
    const resumed: string[] = [];
    for (const c of commands) {
      const ips = c.ip ? [c.ip] : [];
      if (c.kind === 'suspend') this.loop.sched.suspendSite(c.site, ips, c.seconds, c.reason ?? 'operator', now);
      else this.loop.sched.resumeSite(c.site, ips);
      this.ctx.log.warn(
        {
          event: `site_${c.kind}`,
          site: c.site,
          ip: c.ip ?? 'all',
          seconds: c.seconds,
          reason: c.reason,
          source: 'operator',
        },
        `site ${c.site} ${c.kind === 'suspend' ? 'suspended' : 'resumed'} by the operator`,
      );
      this.persistSite(
        writes,
        c.site,
        now,
        c.kind === 'suspend' && !c.ip
          ? { until: c.seconds === null ? null : now + c.seconds * 1000, reason: c.reason ?? 'operator' }
          : c.kind === 'resume' && !c.ip
            ? 'clear'
            : undefined,
      );
      writes.push({ k: 'applied', id: c.id });
      if (c.kind === 'resume') resumed.push(c.site);
    }
    if (commands.length) this.loop.pump();
    return resumed;
  }

  /**
   * Mail of resumed sites (null: every site this loop or the store knows, an IP hold released) set aside in the store
   * is due again now (domains seen by this run or a previous one). PostgreSQL with a pool: the sites' read and each
   * wake-up there, awaited; otherwise at once underneath, as before. A failure is logged, the tick goes on.
   */
  private async wake(sites: string[] | null, now: number): Promise<void> {
    try {
      const stored = await store.storedSitesAsync(this.ctx);
      const names = sites ?? [...new Set([...this.loop.ready.siteMx().keys(), ...stored.map((s) => s.site)])];
      for (const site of names) {
        const row = stored.find((s) => s.site === site);
        const domains = [
          ...new Set([...this.loop.ready.domains(site), ...(row ? (JSON.parse(row.domains_json) as string[]) : [])]),
        ];
        for (const d of domains) this.loop.ready.noteDomain(site, d);
        try {
          if ((await wakeDomainsAsync(this.ctx.db, domains, now)) > 0) this.loop.wake();
        } catch (err) {
          this.ctx.log.error({ err: (err as Error).message, site }, 'resumed site: its waiting mail not woken');
        }
      }
    } catch (err) {
      this.ctx.log.error({ err: (err as Error).message }, 'resumed sites: their waiting mail not woken');
    }
  }

  /** IPs a DNSBL listing suspends on every site (services/ip-health.ts), held or released as the store says. */
  /** Whether an IP hold was released (the waiting mail of every site to wake). */
  private applyIpHolds(holds: Map<string, string>): boolean {
    let released = false;
    for (const [ip, reason] of holds)
      if (this.ipHolds.get(ip) !== reason) {
        this.loop.sched.holdIp(ip, reason);
        this.ctx.log.warn({ event: 'ip_hold', ip, reason }, `${ip} suspended on every site (${reason})`);
      }
    for (const ip of this.ipHolds.keys())
      if (!holds.has(ip)) {
        this.loop.sched.releaseIp(ip);
        released = true;
        this.ctx.log.warn({ event: 'ip_release', ip }, `${ip} resumed on every site`);
      }
    this.ipHolds = holds;
    if (released) this.loop.pump();
    return released;
  }

  private applyWarmups(rows: ControlReads['warmups']): void {
    const seen = new Set<string>();
    for (const w of rows) {
      seen.add(w.ip);
      const cur = this.loop.sched.warmup(w.ip);
      if (!cur || cur.startedAt !== w.started_at || cur.startDay !== w.start_day) {
        this.loop.sched.setWarmup(w.ip, { startedAt: w.started_at, startDay: w.start_day });
        this.ctx.log.warn(
          { event: 'ip_warmup', ip: w.ip, day: w.start_day },
          `warm-up of ${w.ip} started at day ${w.start_day}`,
        );
      }
    }
    for (const ip of this.warm)
      if (!seen.has(ip)) {
        this.loop.sched.setWarmup(ip, null);
        this.ctx.log.warn({ event: 'ip_warmup_stop', ip }, `warm-up of ${ip} stopped`);
      }
    const changed = this.warm.size !== seen.size || [...seen].some((ip) => !this.warm.has(ip));
    this.warm = seen;
    if (changed) this.loop.pump();
  }

  /** Queues whose every IP is suspended for a while give their recipients back to the store until then. */
  private setAsideBlocked(): void {
    const now = this.ctx.now();
    for (const q of this.loop.ready.all()) {
      if (q.length === 0) continue;
      let until = Infinity;
      for (const ip of q.ips) until = Math.min(until, this.heldUntil(ip, q.site, now));
      if (until > now + SET_ASIDE_AFTER_MS) {
        const at = until === Infinity ? now + 60_000 : until;
        const n = this.loop.setAside(q, at);
        this.ctx.log.info(
          { event: 'site_set_aside', site: q.site, recipients: n, until: new Date(at).toISOString() },
          `${n} recipients of ${q.site} wait in the store`,
        );
      }
    }
  }

  /** Until when (ms) no message may leave `ip` for `site` (now: it may). */
  private heldUntil(ip: string, site: string, now: number): number {
    const v = this.loop.sched.view(site, now).find((x) => x.ip === ip);
    // Warm-up caps are not set aside: a stopped warm-up or a new day must find the mail in memory.
    return v?.state === 'suspended' ? (v.until ?? Infinity) : now;
  }

  /** Every lane and site into `writes` (`lanes`: those the store has, whose sites are written too); the gauges. */
  private persist(lanes: readonly { site: string }[], writes: ControlWrite[], now: number): void {
    const counts = this.loop.siteCounts();
    const siteNames = new Set([...this.loop.ready.siteMx().keys(), ...lanes.map((l) => l.site)]);
    this.m.queued.reset();
    this.m.inFlight.reset();
    for (const site of siteNames) {
      const c = counts.get(site) ?? { queued: 0, inFlight: 0 };
      this.m.queued.set({ site }, c.queued);
      this.m.inFlight.set({ site }, c.inFlight);
      const mx = this.loop.ready.siteMx().get(site);
      const domains = JSON.stringify(this.loop.ready.domains(site));
      if (mx)
        writes.push({
          k: 'site',
          row: {
            site,
            mx_json: JSON.stringify(mx),
            queued: c.queued,
            in_flight: c.inFlight,
            sent_last_hour: this.sentLastHour(site, now),
            domains_json: domains,
          },
        });
      this.persistSite(writes, site, now);
    }
    for (const ip of this.warm) {
      const w = this.loop.sched.warmup(ip);
      if (w) this.m.warmDay.set({ ip }, w.startDay + Math.max(0, utcDay(now) - utcDay(w.startedAt)));
    }
  }

  /** The lanes of one site to the store; `hold` also writes (or clears) the whole-site operator hold. */
  private persistSite(
    writes: ControlWrite[],
    site: string,
    now: number,
    hold?: { until: number | null; reason: string } | 'clear',
  ): void {
    for (const v of this.loop.sched.view(site, now)) {
      writes.push({
        k: 'lane',
        row: {
          ip: v.ip,
          site,
          state: v.state,
          until: v.until,
          reason: v.reason,
          rate: v.rate,
          blocklisted: this.loop.sched.lane(v.ip, site).reaction.blocklisted ? 1 : 0,
          day: utcDay(now),
          sent_today: v.sentToday,
        },
      });
      this.m.state.set({ ip: v.ip, site }, STATE_VALUE[v.state]);
      this.m.sentToday.set({ ip: v.ip, site }, v.sentToday);
    }
    if (hold === 'clear') writes.push({ k: 'clear', site });
    else if (hold)
      writes.push({
        k: 'lane',
        row: {
          ip: '*',
          site,
          state: 'suspended',
          until: hold.until,
          reason: hold.reason,
          rate: null,
          blocklisted: 0,
          day: -1,
          sent_today: 0,
        },
      });
  }
}
