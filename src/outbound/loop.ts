// The delivery loop: claims due recipients in batches under a lease, groups them per email and
// destination domain, runs jobs within a global and a per-domain concurrency limit, simulates
// test mode, writes results in batches. wake() starts work at once; stop() finishes or releases.
import type { Component } from '../service.js';
import type { Ctx } from '../services/context.js';
import { emailBySeq, type EmailRow } from '../store/emails.js';
import { tx } from '../store/db.js';
import { FINAL } from '../core/status.js';
import { claimDue, confirmClaims, releaseClaims, nextDue, postponeDomain, setAsideClaims, type Claimed } from './queue.js';
import { ResultSink } from './results.js';
import { deliverJob, type Job, type DeliverDeps } from './deliver.js';
import { simulate } from './simulate.js';
import type { Prepared } from './compose.js';

/** How long the due work of a full domain is set aside before it is looked at again. */
const SET_ASIDE_MS = 2000;
/** A domain whose oldest waiting job has waited this long is slow. */
const SLOW_MS = 1000;

export interface LoopOptions {
  concurrency: number; perDomain: number; leaseMs: number; batch: number; maxHeld: number; idlePollMs: number; graceMs: number;
}

export class OutboundLoop implements Component {
  readonly name = 'outbound';
  private held = new Set<number>();
  private queues = new Map<string, Job[]>();
  private activeByDomain = new Map<string, number>();
  private active = 0;
  private inflight = new Set<Promise<void>>();
  private prepared = new Map<number, { p?: Promise<Prepared>; refs: number }>();
  private setAside = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private wakeQueued = false;
  private stopping = true;
  readonly sink: ResultSink;

  constructor(private ctx: Ctx, private deps: Omit<DeliverDeps, 'prepare'> & { prepare: (e: EmailRow) => Promise<Prepared> }, private o: LoopOptions) {
    this.sink = new ResultSink(ctx, (ids) => { for (const id of ids) this.held.delete(id); this.wake(); });
  }

  async start(): Promise<void> { this.stopping = false; this.wake(); }

  /** Look for due work now (coalesced; safe to call from inside a transaction). */
  wake(): void {
    if (this.stopping || this.wakeQueued) return;
    this.wakeQueued = true;
    setImmediate(() => { this.wakeQueued = false; this.tick(); });
  }

  /** Counters for tests and metrics. */
  stats() { return { held: this.held.size, active: this.active, queued: [...this.queues.values()].reduce((n, q) => n + q.length, 0) }; }

  private tick(): void {
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
    if (this.stopping) return;
    try { this.claimMore(); } catch (err) { this.ctx.log.error({ err: (err as Error).message }, 'claim failed'); }
    this.pump();
    this.scheduleNext();
  }

  private claimMore(): void {
    const full = this.fullDomains(this.ctx.now());
    while (this.held.size < this.o.maxHeld) {
      const now = this.ctx.now();
      const limit = Math.min(this.o.batch, this.o.maxHeld - this.held.size);
      const rows = claimDue(this.ctx.db, now, now + this.o.leaseMs, limit, full);
      const fresh = rows.filter((r) => !this.held.has(r.id));
      if (fresh.length) this.accept(fresh);
      if (rows.length < limit || fresh.length === 0) return;
    }
  }

  /**
   * Slow domains: over a quarter of `maxHeld` waiting (and at least enough to refill their slots
   * twice), the oldest for over SLOW_MS. Their backlog stays in the store (set aside for a moment,
   * keeping enough to refill their slots twice) instead of filling `maxHeld` and starving every other
   * domain. A domain with a backlog that drains is never set aside.
   */
  private fullDomains(now: number): string[] {
    const full = this.full();
    for (const d of full) {
      if ((this.setAside.get(d) ?? 0) > now) continue;
      this.setAside.set(d, now + SET_ASIDE_MS);
      const q = this.queues.get(d)!;
      const excess = q.splice(this.o.perDomain * 2);
      const ids = excess.flatMap((j) => j.rcpts.map((r) => r.id));
      tx(this.ctx.db, () => { setAsideClaims(this.ctx.db, ids, now + SET_ASIDE_MS); postponeDomain(this.ctx.db, d, now, now + SET_ASIDE_MS); });
      for (const id of ids) this.held.delete(id);
      for (const j of excess) this.unref(j.email.seq);
    }
    for (const [d, until] of this.setAside) if (until <= now) this.setAside.delete(d);
    return full;
  }

  /** Ms until the first backlog could count as slow (when nothing else wakes the loop). */
  private untilSlow(): number {
    const backlogs = [...this.queues.values()].filter((q) => q.length >= Math.max(this.o.perDomain * 2, this.o.maxHeld / 4));
    const first = Math.min(...backlogs.map((q) => q[0].queuedAt ?? 0));
    return backlogs.length ? Math.max(5, first + SLOW_MS + 1 - this.ctx.now()) : this.o.idlePollMs;
  }

  private full(): string[] {
    const old = this.ctx.now() - SLOW_MS;
    const backlog = Math.max(this.o.perDomain * 2, this.o.maxHeld / 4);
    return [...this.queues].filter(([, q]) => q.length >= backlog && (q[0].queuedAt ?? 0) < old).map(([d]) => d);
  }

  private accept(rows: Claimed[]): void {
    const byEmail = new Map<number, Claimed[]>();
    for (const r of rows) {
      this.held.add(r.id);
      byEmail.set(r.email_seq, [...(byEmail.get(r.email_seq) ?? []), r]);
    }
    for (const [seq, list] of byEmail) {
      const email = emailBySeq(this.ctx.db, seq);
      const live = list.filter((r) => !FINAL.has(r.status));
      if (!email || live.length < list.length) this.sink.push(seq, [], list.filter((r) => !email || FINAL.has(r.status)).map((r) => r.id));
      if (!email || live.length === 0) continue;
      if (email.test_mode === 1) { this.sink.push(seq, live.flatMap((r) => simulate(r, this.ctx.now())), live.map((r) => r.id)); continue; }
      const byDomain = new Map<string, Claimed[]>();
      for (const r of live) byDomain.set(r.domain, [...(byDomain.get(r.domain) ?? []), r]);
      for (const [domain, rcpts] of byDomain) this.enqueue({ email, domain, rcpts });
    }
  }

  private enqueue(job: Job): void {
    const q = this.queues.get(job.domain) ?? [];
    job.queuedAt ??= this.ctx.now();
    q.push(job);
    this.queues.set(job.domain, q);
    const c = this.prepared.get(job.email.seq) ?? { refs: 0 };
    c.refs++;
    this.prepared.set(job.email.seq, c);
  }

  /** Starts queued jobs while limits allow, round-robin over domains; their claims confirmed in one transaction. */
  private pump(): void {
    const starting: Job[] = [];
    const busy = (d: string) => (this.activeByDomain.get(d) ?? 0) + starting.filter((j) => j.domain === d).length;
    for (const [domain, q] of [...this.queues]) {
      if (this.stopping || this.active + starting.length >= this.o.concurrency) break;
      while (q.length && this.active + starting.length < this.o.concurrency && busy(domain) < this.o.perDomain) starting.push(q.shift()!);
      this.queues.delete(domain);
      if (q.length) this.queues.set(domain, q); // to the back of the line
    }
    if (starting.length === 0) return;
    const ids = starting.flatMap((j) => j.rcpts.map((r) => r.id));
    let ok: Set<number>;
    try {
      ok = tx(this.ctx.db, () => confirmClaims(this.ctx.db, ids, this.ctx.now() + this.o.leaseMs));
    } catch (err) {
      // A store error (busy, I/O): the jobs go back to the head of their queues; the next tick retries.
      this.ctx.log.error({ err: (err as Error).message, jobs: starting.length }, 'claim confirmation failed');
      for (const job of starting.reverse()) this.queues.set(job.domain, [job, ...(this.queues.get(job.domain) ?? [])]);
      return;
    }
    for (const job of starting) this.run(job, ok);
  }

  private run(job: Job, ok: Set<number>): void {
    // `ok` holds the confirmed ids of every job of this pump: compare per id, not by count.
    const dropped = job.rcpts.map((r) => r.id).filter((id) => !ok.has(id));
    if (dropped.length) this.sink.push(job.email.seq, [], dropped);
    job.rcpts = job.rcpts.filter((r) => ok.has(r.id));
    if (job.rcpts.length === 0) { this.unref(job.email.seq); return; }
    this.active++;
    this.activeByDomain.set(job.domain, (this.activeByDomain.get(job.domain) ?? 0) + 1);
    const p: Promise<void> = deliverJob({ ...this.deps, prepare: (e) => this.preparedFor(e) }, job)
      .then((outcomes) => this.sink.push(job.email.seq, outcomes, job.rcpts.map((r) => r.id)))
      .finally(() => {
        this.active--;
        const n = (this.activeByDomain.get(job.domain) ?? 1) - 1;
        if (n > 0) this.activeByDomain.set(job.domain, n); else this.activeByDomain.delete(job.domain);
        this.unref(job.email.seq);
        this.inflight.delete(p);
        this.schedulePump();
      });
    this.inflight.add(p);
  }

  private pumpQueued = false;
  /** Coalesces the pumps of many jobs finishing in the same turn. */
  private schedulePump(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    setImmediate(() => { this.pumpQueued = false; if (!this.stopping) this.pump(); });
  }

  /** Compose + sign once per email while any of its jobs is held. */
  private preparedFor(email: EmailRow): Promise<Prepared> {
    const c = this.prepared.get(email.seq) ?? { refs: 0 };
    c.p ??= this.deps.prepare(email);
    this.prepared.set(email.seq, c);
    return c.p;
  }

  private unref(seq: number): void {
    const c = this.prepared.get(seq);
    if (c && --c.refs <= 0) this.prepared.delete(seq);
  }

  private scheduleNext(): void {
    // Full: a flush wakes us, and a look for slow domains to set aside within SLOW_MS.
    if (this.held.size >= this.o.maxHeld) { this.timer = setTimeout(() => this.tick(), this.untilSlow()); return; }
    let due: number | null = null;
    try { due = nextDue(this.ctx.db, this.full()); } catch (err) { this.ctx.log.error({ err: (err as Error).message }, 'next due time unknown'); }
    const wait = due === null ? this.o.idlePollMs : Math.min(this.o.idlePollMs, Math.max(5, due - this.ctx.now()));
    this.timer = setTimeout(() => this.tick(), wait);
  }

  /** Stop claiming; release jobs not started; let running ones finish within the grace time; release the rest. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const waiting = [...this.queues.values()].flat();
    this.queues.clear();
    const waitingIds = waiting.flatMap((j) => j.rcpts.map((r) => r.id));
    releaseClaims(this.ctx.db, waitingIds, this.ctx.now());
    for (const id of waitingIds) this.held.delete(id);
    if (this.inflight.size) {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => { t = setTimeout(r, this.o.graceMs); })]);
      clearTimeout(t);
    }
    this.sink.close();
    this.deps.smtp.closeAll();
    const rest = [...this.held];
    const n = releaseClaims(this.ctx.db, rest, this.ctx.now());
    this.held.clear();
    this.ctx.log.info({ released: waitingIds.length + n }, 'outbound stopped');
  }
}
