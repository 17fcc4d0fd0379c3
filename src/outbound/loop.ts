// The delivery loop (an adapter around core/shaping's Scheduler): claims due recipients in batches under a
// lease, resolves each domain's MX → site, feeds per-(site, IP list) ready queues, starts one transaction per
// scheduler decision, reacts to replies, writes results in batches. wake() starts work at once.
import type { Component } from '../types/component.js';
import type { Ctx } from '../services/context.js';
import { nextDue, emailBySeq, nextDueAsync, type Claimed, type EmailRow, type Intake } from '../services/delivery.js';
import { Claims } from './claims.js';
import { FINAL } from '../core/status.js';
import { Scheduler } from '../core/shaping/scheduler.js';
import { siteMatcher, type SiteMatcher } from '../core/shaping/sites.js';
import type { Shaping } from '../core/shaping/rules.js';
import { knownReads, type OutcomeReads, type RecipientOutcome } from '../services/transition.js';
import { ResultSink } from './results.js';
import type { TlsTally } from '../services/tls-reports.js';
import { deliverOne, type DeliverDeps, type Sent } from './deliver.js';
import type { StsPolicies, TlsPlan } from './mta-sts.js';
import type { DanePolicies } from './dane.js';
import { simulate } from './simulate.js';
import { toOutcome, type Verdict } from './outcome.js';
import type { Prepared } from './compose.js';
import type { SourcePools } from './sources.js';
import { IdleTrim, fullGc } from './trim.js';
import { Preparing } from './preparing.js';
import { fullAt, ReadyQueues, type Item, type ReadyQueue } from './ready.js';
import type { Control } from './control.js';
import { outageLog } from '../services/store-health.js';
import { traceMemory } from '../lib/memory-trace.js';

/** Messages composed and signed at once (signing runs on libuv's pool; composing on the event loop). */
const PREPARE_AT_ONCE = 32;
/** Shortest time between two claims started by wake-ups (new mail, results written). */
const TICK_MS = 5;
/** Longest sleep while some domains are left in the store for now (their queue in memory is slow). */
const SKIP_POLL_MS = 200;

export interface LoopOptions {
  /** most transactions at once (all sites); lease of a claim; claim batch; most recipients waiting in memory */
  concurrency: number;
  leaseMs: number;
  batch: number;
  maxHeld: number;
  idlePollMs: number;
  graceMs: number;
}
export interface LoopDeps extends DeliverDeps {
  prepare: (e: EmailRow) => Promise<Prepared>;
  sources: SourcePools;
  shaping: Shaping;
  messagesPerConnection: number;
  /** recipient domains' TLS (MTA-STS, the operator's override); none: MTA_OUTBOUND_TLS for all */
  sts?: StsPolicies;
  /** DANE (MTA_DANE=on): added to a domain's plan once its MX hosts are known */
  dane?: DanePolicies;
  /** composes and signs off this thread (optional) */
  signer?: {
    start(): void;
    stop(): Promise<void>;
    trim?(): Promise<void>;
    readonly inFlight?: { signing: number; sending: number };
  };
}

/** Least time a transaction is started with (or half its deadline, if less), confirmed on the pool after a long wait. */
const MIN_BUDGET_MS = 1000;

/** A recipient the scheduler let start, its claim to be confirmed. */
interface Start {
  item: Item;
  q: ReadyQueue;
  ip: string;
  site: string;
}

export class OutboundLoop implements Component, Intake {
  readonly name = 'outbound';
  readonly sink: ResultSink;
  readonly sched: Scheduler;
  readonly ready = new ReadyQueues();
  control: Control | null = null;
  /** Claims, leases and the recipients held under them (./claims.ts). */
  private readonly claims: Claims;
  /** Recipients taken in their insert (hand): how many the email has in all (knownOf). */
  private whole = new WeakMap<Claimed, number>();
  /** Recipients whose results were pushed with what the loop knew of them (knownOf). */
  private knownResults = 0;
  private active = 0;
  private resolving = 0;
  /** `resolving` by recipient domain. */
  private resolvingBy = new Map<string, number>();
  private inflight = new Set<Promise<void>>();
  private preparing: Preparing;
  private matcher: SiteMatcher;
  private timer: NodeJS.Timeout | null = null;
  private wakeTimer: NodeJS.Timeout | null = null;
  private wakeAt = Infinity;
  private wakeQueued = false;
  private lastTick = 0;
  /** After a burst, once idle: memory back to the system (the signing worker ends, then a full GC here). */
  private trimmer = new IdleTrim(() => void this.trimMemory());
  private pumpQueued = false;
  private stopping = true;
  /** Recipients of new emails leased to this loop whose transaction has not ended yet. */
  private reserved = 0;
  /** Recipients taken in straight from their insert (Intake). */
  private intake = 0;
  /** The next tick claims whatever it finds (a wake-up from outside, a timer); see tick(). */
  private mustClaim = true;
  /** The store's earliest next_attempt_at when last read (nextWait); -Infinity: unknown. */
  private dueAt = -Infinity;
  /** Store errors while its database is away: logged once per outage (the store reconnects with back-off). */
  private outage: ReturnType<typeof outageLog>;
  /**
   * PostgreSQL with a pool (claims.async): claims, confirmations and the next due time are awaited (tickPooled), not
   * run on the synchronous connection. `claiming`: a claim is on its way (a tick meanwhile only notes `again`);
   * `starting`: recipients whose confirmation is on its way (counted as active); `pending`: those store calls,
   * awaited by stop().
   */
  private claiming = false;
  private again = false;
  private starting = 0;
  private pending = new Set<Promise<unknown>>();
  /** MTA_MEMORY_TRACE: stops this thread's sampler. */
  private untrace: (() => void) | null = null;

  constructor(
    private ctx: Ctx,
    readonly deps: LoopDeps,
    private o: LoopOptions,
  ) {
    this.outage = outageLog(ctx.log.child({ component: 'delivery' }), 'delivery loop');
    this.claims = new Claims(ctx, o, {
      room: () => this.o.maxHeld - this.ready.total - this.resolving,
      skip: (now) => this.skipped(now),
      stopping: () => this.stopping,
      accept: (rows, emails) => this.accept(rows, emails),
    });
    // Each result written under its recipient's claim (the lease token held when it is written), never another node's.
    this.sink = new ResultSink(ctx, (ids, due) => this.letGo(ids, due, () => this.claims.settled(ids)), {
      delayMs: 10,
      max: 200,
      leaseOf: (id) => this.claims.held.get(id) ?? null,
    });
    this.preparing = new Preparing((e) => deps.prepare(e), PREPARE_AT_ONCE);
    this.sched = new Scheduler(deps.shaping);
    this.matcher = siteMatcher(deps.shaping.sites);
  }

  async start(): Promise<void> {
    this.stopping = false;
    this.untrace ??= traceMemory('main', () => ({
      ...this.stats(),
      preparing: this.preparing.size,
      ...this.deps.signer?.inFlight,
    }));
    this.deps.signer?.start();
    this.control?.start();
    this.wake();
  }

  /** Look for due work now (coalesced; safe to call from inside a transaction): the next tick claims. */
  wake(): void {
    this.mustClaim = true;
    this.poke();
  }

  /**
   * Look again soon, claiming only when the store may hold due work (tick()): results with no retry written, new
   * mail taken in by Intake. Coalesced like wake().
   */
  poke(): void {
    if (this.stopping || this.wakeQueued) return;
    this.wakeQueued = true;
    const run = () => {
      this.wakeQueued = false;
      this.tick();
    };
    // At once after a quiet spell, else one claim per TICK_MS: hundreds of API submissions a second do not
    // each pay a claim query.
    const wait = this.lastTick + TICK_MS - Date.now();
    if (wait > 0) setTimeout(run, wait);
    else setImmediate(run);
  }

  /** Counters for tests and metrics. */
  /**
   * The signing worker ends first (its heap and arena go back), then this thread's compacting GC: run at the same
   * moment, the GC's room to move survivors into came on top of the worker's heap and set the run's peak RSS. Skipped
   * when work came meanwhile.
   */
  private async trimMemory(): Promise<void> {
    const before = process.memoryUsage.rss();
    await this.deps.signer?.trim?.().catch(() => undefined);
    if (this.trimmer.pending > 0 || this.stopping) return;
    const done = fullGc();
    const mib = (n: number) => Math.round(n / 1048576);
    this.ctx.log.info(
      { done, rss_before_mib: mib(before), rss_mib: mib(process.memoryUsage.rss()) },
      'idle: memory trimmed',
    );
  }

  stats() {
    const queued = this.ready.total + this.resolving;
    const { active, reserved, knownResults, intake } = this;
    const { held, queries: claimQueries, claimed } = this.claims;
    const lostResults = this.sink.lost; // results not written: their claims had passed on (results.ts claimsGone)
    return { held: held.size, active, queued, reserved, claimQueries, knownResults, claimed, intake, lostResults };
  }

  /** Recipients waiting and in flight per site (for `mta sites` and metrics). */
  siteCounts(): Map<string, { queued: number; inFlight: number }> {
    return this.ready.bySite();
  }

  /**
   * Claims, starts what may start, sleeps until the next due time. A tick from poke() only starts what may start
   * while the last claim found everything, nothing written since can have come due (results with no retry, new
   * mail taken in by Intake), and the store's earliest next_attempt_at read after that claim is still ahead: under a
   * stream of such mail the claim query and that read found nothing, and on PostgreSQL the claim also cut the open
   * group-commit turn short. The timer (at that due time, at most idlePollMs) always claims.
   */
  private tick(): void {
    if (this.stopping) return;
    this.lastTick = Date.now();
    if (!this.mustClaim && this.claims.caughtUp && this.timer && this.ctx.now() < this.dueAt) return this.pump();
    if (this.claiming) {
      if (this.mustClaim) this.again = true; // a wake-up: claimed again once the claim on its way is answered
      return this.pump();
    }
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.claims.async) return void this.track(this.tickPooled());
    try {
      this.mustClaim = false;
      this.claims.claimMore();
      this.outage.ok();
    } catch (err) {
      this.mustClaim = true;
      if (!this.outage.failed(err)) this.ctx.log.error({ err: (err as Error).message }, 'claim failed');
    }
    this.pump();
    if (this.stopping) return;
    this.timer = setTimeout(() => {
      this.mustClaim = true; // also the poll that finds what other nodes or processes left due
      this.tick();
    }, this.nextWait());
  }

  /**
   * How long to sleep: until the next due time, at most idlePollMs. While domains are left in the store (a slow
   * queue) no query (skipping them would scan their due rows on every tick): look again within SKIP_POLL_MS.
   */
  private nextWait(): number {
    this.dueAt = -Infinity;
    if (this.ready.slowDomains(this.ctx.now(), this.o.maxHeld).length) return Math.min(this.o.idlePollMs, SKIP_POLL_MS);
    try {
      const due = nextDue(this.ctx.db);
      this.dueAt = due ?? Infinity;
      return due === null ? this.o.idlePollMs : Math.min(this.o.idlePollMs, Math.max(5, due - this.ctx.now()));
    } catch (err) {
      if (!this.outage.failed(err)) this.ctx.log.error({ err: (err as Error).message }, 'next due time unknown');
      return this.o.idlePollMs;
    }
  }

  /** A store call on its way, awaited by stop() before it releases what the loop holds. */
  private track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p)).catch(() => undefined);
    return p;
  }

  /** tick() on the pool: the claims, then the next due time, awaited; the event loop goes on meanwhile. */
  private async tickPooled(): Promise<void> {
    this.claiming = true;
    this.again = false;
    try {
      this.mustClaim = false;
      await this.claims.claimMorePooled();
      this.outage.ok();
    } catch (err) {
      this.mustClaim = true;
      if (!this.outage.failed(err)) this.ctx.log.error({ err: (err as Error).message }, 'claim failed');
    }
    this.pump();
    let wait = this.o.idlePollMs;
    this.dueAt = -Infinity;
    try {
      if (this.ready.slowDomains(this.ctx.now(), this.o.maxHeld).length) wait = Math.min(wait, SKIP_POLL_MS);
      else if (!this.stopping) {
        const due = await nextDueAsync(this.ctx.db);
        this.dueAt = due ?? Infinity;
        if (due !== null) wait = Math.min(wait, Math.max(5, due - this.ctx.now()));
      }
    } catch (err) {
      if (!this.outage.failed(err)) this.ctx.log.error({ err: (err as Error).message }, 'next due time unknown');
    } finally {
      this.claiming = false;
    }
    if (this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.mustClaim = true; // also the poll that finds what other nodes or processes left due
      this.tick();
    }, wait);
    if (this.again) this.poke();
  }

  /** Intake: new recipients were stored unleased (scheduled, or not taken): the next tick claims. */
  notTaken(): void {
    this.mustClaim = true;
  }

  /** Intake: new recipients due now, leased in their insert, while nothing older waits in the store and there is room. */
  reserve(n: number, domains: readonly string[]): number | null {
    if (this.stopping || !this.claims.caughtUp) return null;
    if (this.ready.total + this.resolving + this.reserved + n > this.o.maxHeld) {
      this.claims.caughtUp = false; // the rest goes to the store, and the claims take it in order
      return null;
    }
    // Mail for a full or slow domain stays in the store (the claims skip it; notTaken() has them look), that of
    // other domains still comes straight in.
    const skipped = this.skipped(this.ctx.now());
    if (skipped.length && domains.some((d) => skipped.includes(d))) return null;
    this.reserved += n;
    return this.ctx.now() + this.o.leaseMs;
  }

  /** Intake: the email's transaction ended; its leased recipients join the loop (or, stopping, go back to the store). */
  hand(n: number, email: EmailRow | null, rows: Claimed[]): void {
    this.reserved -= n;
    if (!email || rows.length === 0) return;
    if (this.stopping) {
      try {
        this.claims.hold(rows);
        this.claims.release(
          rows.map((r) => r.id),
          this.ctx.now(),
        );
      } catch (err) {
        this.ctx.log.error({ err: (err as Error).message }, 'new recipients not released (their lease will end)');
      }
      return;
    }
    this.intake += rows.length;
    for (const r of rows) this.whole.set(r, rows.length);
    this.accept(rows, new Map([[email.seq, email]]));
  }

  /**
   * The email and its recipients as this loop knows them, when `rcpts` are all the recipients it took in their very
   * insert (hand), for a results batch that need not read them (knownReads); once per recipient taken.
   */
  private knownOf(email: EmailRow, rcpts: readonly Claimed[]): OutcomeReads | undefined {
    const all = rcpts.length > 0 && rcpts.every((r) => this.whole.get(r) === rcpts.length);
    for (const r of rcpts) this.whole.delete(r);
    if (!all) return undefined;
    this.knownResults += rcpts.length;
    return knownReads(email, rcpts);
  }

  /**
   * Domains left in the store for now: those of slow or full queues, and those with half the loop's memory on its
   * way into a queue (claimed, their message and MX being made ready): a burst to one domain would otherwise fill
   * the memory before its queue is seen to be full.
   */
  private skipped(now: number): string[] {
    const out = this.ready.slowDomains(now, this.o.maxHeld);
    const full = fullAt(this.o.maxHeld);
    for (const [domain, n] of this.resolvingBy) if (n >= full && !out.includes(domain)) out.push(domain);
    return out;
  }

  private accept(rows: Claimed[], known?: Map<number, EmailRow>): void {
    this.trimmer.busy(0);
    const byEmail = new Map<number, Claimed[]>();
    this.claims.hold(rows);
    for (const r of rows) {
      const l = byEmail.get(r.email_seq);
      if (l) l.push(r);
      else byEmail.set(r.email_seq, [r]);
    }
    for (const [seq, list] of byEmail) {
      const email = known?.get(seq) ?? emailBySeq(this.ctx.db, seq);
      const live = list.filter((r) => !FINAL.has(r.status));
      if (!email || live.length < list.length)
        this.sink.push(
          seq,
          [],
          list.filter((r) => !email || FINAL.has(r.status)).map((r) => r.id),
        );
      if (!email || live.length === 0) continue;
      if (email.test_mode === 1) {
        this.sink.push(
          seq,
          live.flatMap((r) => simulate(r, this.ctx.now())),
          live.map((r) => r.id),
          undefined,
          this.knownOf(email, live),
        );
        continue;
      }
      const byDomain = new Map<string, Claimed[]>();
      for (const r of live) {
        const l = byDomain.get(r.domain);
        if (l) l.push(r);
        else byDomain.set(r.domain, [r]);
      }
      for (const [domain, rcpts] of byDomain) void this.resolve(email, domain, rcpts);
    }
  }

  /** Message built and signed once per email, MX → site, then into the site's ready queue. */
  private async resolve(email: EmailRow, domain: string, rcpts: Claimed[]): Promise<void> {
    this.resolving += rcpts.length;
    this.resolvingBy.set(domain, (this.resolvingBy.get(domain) ?? 0) + rcpts.length);
    let prep: Prepared, route: Awaited<ReturnType<LoopDeps['mx']['route']>>, tls: TlsPlan | undefined;
    try {
      [prep, route, tls] = await Promise.all([
        this.preparing.get(email),
        this.deps.mx.route(domain),
        this.deps.sts?.planFor(domain),
      ]);
      if (this.deps.dane && route.kind === 'hosts')
        tls = await this.deps.dane.apply(domain, route.hosts, tls ?? { policy: this.defaultPolicy() });
    } catch (err) {
      prep = { ok: false, error: 'compose_failed', message: (err as Error).message };
      route = { kind: 'defer', text: 'internal error' };
    } finally {
      this.resolving -= rcpts.length;
      const left = this.resolvingBy.get(domain)! - rcpts.length;
      if (left > 0) this.resolvingBy.set(domain, left);
      else this.resolvingBy.delete(domain);
      this.preparing.release(email.seq);
    }
    if (this.stopping) return;
    if (!prep.ok) return this.settle(email, rcpts, { kind: 'failed', error: prep.error, message: prep.message }, {});
    if (route.kind === 'hard')
      return this.settle(
        email,
        rcpts,
        { kind: 'dns_hard', reason: route.reason, enhanced: route.enhanced, text: route.text },
        {},
      );
    if (route.kind === 'defer')
      return this.settle(email, rcpts, { kind: 'deferred', reply: null, command: 'DNS', error: route.text }, {});
    const site = this.matcher.siteOf(route.hosts);
    const { ips, own } = this.deps.sources.lanesFor(email.team_id, site);
    const q = this.ready.queue(site, ips, own, this.deps.shaping.sites.find((s) => s.name === site)?.mx ?? route.hosts);
    const now = this.ctx.now();
    this.ready.noteDomain(site, domain);
    for (const r of rcpts)
      q.push({
        email,
        rcpt: r,
        hosts: route.hosts,
        raw: prep.raw,
        returnDomain: prep.returnDomain,
        tls,
        since: now,
        moves: 0,
      });
    this.sched.add(q.key, site, q.ips, rcpts.length);
    this.schedulePump();
  }

  /** The plan's policy without MTA-STS nor override (MTA_OUTBOUND_TLS). */
  private defaultPolicy(): 'none' | 'opportunistic' {
    return this.ctx.config.outboundTls === 'off' ? 'none' : 'opportunistic';
  }

  /** The same verdict for every recipient of a job (no SMTP attempt made). */
  private settle(email: EmailRow, rcpts: Claimed[], v: Verdict, info: Sent['info'], site?: string): void {
    const now = this.ctx.now();
    this.sink.push(
      email.seq,
      rcpts.map((r) =>
        toOutcome(r, v, { ...info, duration_ms: 0, source: 'smtp' }, this.deps.policy, now, Math.random()),
      ),
      rcpts.map((r) => r.id),
      site,
      this.knownOf(email, rcpts),
    );
  }

  /** Starts what the scheduler allows now; their claims confirmed in one transaction; arms the next wake-up. */
  pump(): void {
    if (this.stopping) return;
    const now = this.ctx.now();
    const starts: Start[] = [];
    while (this.active + this.starting + starts.length < this.o.concurrency) {
      const d = this.sched.next(now);
      if (!d) break;
      const q = this.ready.get(d.queue);
      const item = q?.shift(now);
      if (!q || !item) {
        this.sched.done(d.ip, d.site, false);
        continue;
      }
      starts.push({ item, q, ip: d.ip, site: d.site });
    }
    this.armWake(now);
    if (!starts.length) return;
    if (this.claims.async) return void this.track(this.confirmPooled(starts, now));
    let ok: Set<number>;
    try {
      ok = this.claims.confirm(
        starts.map((s) => s.item.rcpt.id),
        now + this.o.leaseMs,
      );
    } catch (err) {
      return this.unconfirmed(starts, err);
    }
    this.startConfirmed(starts, ok);
  }

  /** pump()'s confirmation on the pool, awaited: its recipients count as active meanwhile (`starting`). */
  private async confirmPooled(starts: Start[], now: number): Promise<void> {
    this.starting += starts.length;
    let ok: Set<number>;
    const asked = performance.now();
    try {
      const ids = starts.map((s) => s.item.rcpt.id);
      ok = await this.claims.confirmPooled(ids, now + this.o.leaseMs);
    } catch (err) {
      return this.unconfirmed(starts, err);
    } finally {
      this.starting -= starts.length;
    }
    if (this.stopping) {
      // stop() drained the queues already: these stay held, and it releases them.
      for (const s of starts) this.sched.done(s.ip, s.site, false);
      return;
    }
    // The lease runs from `now`, before the wait: a transaction gets what is left of its deadline (deliver.ts budgetMs),
    // so that it still ends before its lease does, when another node may claim the recipient.
    const budget = this.deps.deadlineMs - (performance.now() - asked);
    if (budget < Math.min(MIN_BUDGET_MS, this.deps.deadlineMs / 2)) this.tooLate(starts, ok);
    else this.startConfirmed(starts, ok, budget);
    this.schedulePump();
  }

  /** Confirmed too late to start before the lease ends: back to the head of their queues, confirmed again later. */
  private tooLate(starts: Start[], ok: Set<number>): void {
    this.ctx.log.warn({ jobs: starts.length }, 'claim confirmation took most of the lease: sends put back');
    this.putBack(starts.filter((s) => ok.has(s.item.rcpt.id)));
    this.startConfirmed(
      starts.filter((s) => !ok.has(s.item.rcpt.id)),
      ok,
    );
  }

  /** A store error (busy, I/O, its database away): back to the head of their queues; the next tick retries. */
  private unconfirmed(starts: Start[], err: unknown): void {
    if (!this.outage.failed(err))
      this.ctx.log.error({ err: (err as Error).message, jobs: starts.length }, 'claim confirmation failed');
    this.putBack(starts);
  }

  /** Not started: back to the head of their queues (still held; the next pump confirms them again). */
  private putBack(starts: Start[]): void {
    for (const s of starts.reverse()) {
      this.sched.done(s.ip, s.site, false);
      s.q.unshift(s.item);
      this.sched.add(s.q.key, s.site, s.q.ips, 1);
    }
  }

  /**
   * The confirmed start; the others (final, held, or claimed by another node since their lease ended) leave the
   * loop through the sink, without an outcome.
   */
  private startConfirmed(starts: Start[], ok: Set<number>, budgetMs?: number): void {
    const refused: number[] = [];
    for (const s of starts) {
      if (ok.has(s.item.rcpt.id)) this.run(s.item, s.q, s.ip, s.site, budgetMs);
      else {
        this.sched.done(s.ip, s.site, false);
        refused.push(s.item.rcpt.id);
      }
    }
    if (!refused.length) return;
    // Not through the result sink: its settle would clear the lease of a node that claimed them since.
    try {
      this.letGo(refused, true, () => this.claims.drop(refused));
    } catch (err) {
      if (!this.outage.failed(err)) this.ctx.log.error({ err: (err as Error).message }, 'refused claims not dropped');
    }
  }

  /** Recipients the loop no longer holds (`release` lets go of them in the store); `due`: look for due work again. */
  private letGo(ids: number[], due: boolean, release: () => void): void {
    try {
      release();
    } finally {
      this.trimmer.busy(ids.length);
      if (this.claims.held.size === 0 && this.active === 0) this.trimmer.idle();
      if (due) this.wake();
      else this.poke();
    }
  }

  private armWake(now: number): void {
    const at = this.sched.wakeAt();
    if (at === Infinity || (this.wakeTimer && at >= this.wakeAt)) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = null;
        this.wakeAt = Infinity;
        this.pump();
      },
      Math.max(0, Math.min(at - now, 2 ** 31 - 1)),
    );
  }

  private run(item: Item, q: ReadyQueue, ip: string, site: string, budgetMs?: number): void {
    this.active++;
    q.inFlight++;
    const started = Date.now();
    const p: Promise<void> = deliverOne(this.deps, {
      emailId: item.email.id,
      deliveryId: item.rcpt.id,
      recipient: item.rcpt.recipient,
      domain: item.rcpt.domain,
      raw: item.raw,
      returnDomain: item.returnDomain,
      hosts: item.hosts,
      bind: this.deps.sources.bindOf(ip),
      ownPool: q.own,
      pool: `${ip} ${site}`,
      maxMessages: Math.min(this.deps.messagesPerConnection, this.deps.shaping.limitsOf(site).messages_per_connection),
      maxSessions: this.sched.connections(ip, site),
      tls: item.tls,
      budgetMs,
    })
      .then((r) => this.finish(item, q, ip, site, r, Date.now() - started))
      .catch((err) => this.ctx.log.error({ err: (err as Error).message }, 'delivery result not recorded'))
      .finally(() => {
        this.active--;
        q.inFlight--;
        this.inflight.delete(p);
        this.schedulePump();
      });
    this.inflight.add(p);
  }

  /** Reply reactions first (a reply that triggers one never bounces: deferred, or moved to another IP), then the outcome. */
  private finish(item: Item, q: ReadyQueue, ip: string, site: string, r: Sent, duration: number): void {
    const now = this.ctx.now();
    this.sched.done(ip, site, r.closed);
    // It waited for a session and never went out: not an attempt. Back to the head of its queue, or (stopping) left
    // held, for stop() to release.
    if (r.notStarted) {
      if (this.stopping) return;
      q.unshift(item);
      this.sched.add(q.key, site, q.ips, 1);
      return;
    }
    let v = r.verdict;
    if ((v.kind === 'deferred' || v.kind === 'rejected') && v.reply) {
      const reaction = this.sched.reply(ip, site, v.reply, now);
      if (reaction) {
        this.control?.reacted(ip, site, reaction.action, reaction.seconds, v.reply);
        if (reaction.action === 'blocklist' && q.ips.length > 1 && item.moves < q.ips.length) {
          item.moves++;
          q.unshift(item);
          this.sched.add(q.key, site, q.ips, 1);
          return;
        }
        if (v.kind === 'rejected') v = { kind: 'deferred', reply: v.reply, command: v.command };
      }
    }
    const o: RecipientOutcome = toOutcome(
      item.rcpt,
      v,
      { ...r.info, duration_ms: duration, source: 'smtp' },
      this.deps.policy,
      now,
      Math.random(),
    );
    if (v.kind === 'accepted') this.control?.sent(site, now);
    this.sink.push(item.email.seq, [o], [item.rcpt.id], site, this.knownOf(item.email, [item.rcpt]), tallyOf(item));
    // Turned away before its recipient was judged (time-out, drop, 4xx to MAIL): the email's other waiting
    // recipients at this domain are deferred the same way instead of knocking again at once.
    if (v.kind === 'deferred' && v.command !== 'RCPT' && v.command !== 'DATA') {
      const same = q.take((x) => x.email.seq === item.email.seq && x.rcpt.domain === item.rcpt.domain);
      if (same.length) {
        this.sched.setQueue(q.key, site, q.ips, q.length);
        this.settle(
          item.email,
          same.map((x) => x.rcpt),
          v,
          r.info,
          site,
        );
      }
    }
  }

  /** Coalesces the pumps of many transactions finishing in the same turn. */
  private schedulePump(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    setImmediate(() => {
      this.pumpQueued = false;
      if (!this.stopping) this.pump();
    });
  }

  /** Gives waiting recipients of a queue back to the store, due at `at` (a long suspension, a warm-up cap). */
  setAside(q: ReadyQueue, at: number): number {
    const items = q.drain();
    this.sched.setQueue(q.key, q.site, q.ips, 0);
    const ids = items.map((i) => i.rcpt.id);
    this.claims.release(ids, at);
    return ids.length;
  }

  /** Stop claiming; release waiting recipients; let running ones finish within the grace time; release the rest. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    await Promise.allSettled([...this.pending]); // claims and confirmations on their way (PostgreSQL, pool)
    if (this.timer) clearTimeout(this.timer);
    const waitingIds = this.ready.drainAll().map((i) => i.rcpt.id);
    this.claims.release(waitingIds, this.ctx.now());
    this.deps.smtp.dropWaiting(); // sends waiting for a session never go out: released below with the held ones
    if (this.inflight.size) {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.inflight]),
        new Promise((r) => {
          t = setTimeout(r, this.o.graceMs);
        }),
      ]);
      clearTimeout(t);
    }
    await this.sink.close();
    await this.control?.stop();
    this.trimmer.stop();
    this.untrace?.();
    this.untrace = null;
    this.deps.smtp.closeAll();
    await this.deps.signer?.stop();
    const n = this.claims.releaseAll(this.ctx.now());
    this.ctx.log.info({ released: waitingIds.length + n }, 'outbound stopped');
  }
}

/** What a TLS report counts of an attempt (services/tls-reports.ts); none for a TLS report's own mail (RFC 8460 §3). */
function tallyOf(item: Item): TlsTally | undefined {
  if (isTlsReport(item.raw)) return undefined;
  return { domain: item.rcpt.domain, mode: item.tls?.mode, mx: item.tls?.mx };
}

/** A message whose header carries TLS-Report-Domain (a report mail submitted whole, services/tls-report-mail.ts). */
function isTlsReport(raw: Buffer): boolean {
  const end = raw.indexOf('\r\n\r\n');
  return /(^|\n)TLS-Report-Domain:/i.test(
    raw.subarray(0, end < 0 ? Math.min(raw.length, 65536) : end).toString('latin1'),
  );
}
