// The outbox dispatcher: claims due deliveries in batches under a lease, POSTs them signed with
// bounded concurrency, records each attempt, schedules retries and disables endpoints failing for days.
import type { Resolver } from 'node:dns/promises';
import type { Logger } from 'pino';
import { tx } from '../store/db.js';
import * as store from '../store/webhooks.js';
import { signingSecrets } from '../services/webhooks.js';
import type { Ctx } from '../services/context.js';
import type { Component } from '../service.js';
import { Agents, postWebhook, type PostResult } from './post.js';
import { guardedLookup } from './ssrf.js';
import { signedHeaders } from './sign.js';
import { retryDelayMs, verdictOf, DISABLE_AFTER_FAILING_MS, DISABLE_AFTER_FAILED_DELIVERIES, type Verdict } from './schedule.js';

export interface DispatcherOptions { concurrency?: number; timeoutMs?: number; leaseMs?: number; pollMs?: number }

const RETENTION_MS = 30 * 24 * 3600 * 1000;

export class Dispatcher implements Component {
  readonly name = 'webhooks';
  private running = false;
  private inflight = new Set<Promise<void>>();
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private stopping = new AbortController();
  private lastPrune = 0;
  private agents = new Agents();
  private readonly log: Logger;
  private readonly o: Required<DispatcherOptions>;

  constructor(private ctx: Ctx, private resolver: Resolver, opts: DispatcherOptions = {}) {
    this.log = ctx.log.child({ component: 'webhooks' });
    const timeoutMs = opts.timeoutMs ?? 10_000;
    this.o = { concurrency: opts.concurrency ?? 16, timeoutMs, leaseMs: opts.leaseMs ?? timeoutMs + 30_000, pollMs: opts.pollMs ?? 1000 };
  }

  /** New outbox rows were written: look now (deferred, so the writing transaction has committed). */
  notify(): void {
    if (this.wake) setImmediate(() => this.wake?.());
  }

  async start(): Promise<void> {
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    this.wake?.();
    await this.loop;
    await Promise.all([...this.inflight]);
    this.agents.destroy();
  }

  private async run(): Promise<void> {
    while (this.running) {
      // A group-commit batch is open on this connection: its rows are not durable yet, wait for COMMIT.
      if (this.ctx.db.inTransaction) { await new Promise((r) => setImmediate(r)); continue; }
      try {
        this.prune();
        const free = this.o.concurrency - this.inflight.size;
        const claimed = free > 0 ? this.claim(free) : [];
        for (const seq of claimed) this.track(this.deliver(seq));
        if (claimed.length > 0 && claimed.length === free) continue;
      } catch (err) {
        this.log.error({ err }, 'dispatch loop error');
      }
      await this.sleep();
    }
  }

  private claim(limit: number): number[] {
    const now = this.ctx.now();
    return tx(this.ctx.db, () => store.claimDue(this.ctx.db, now, now + this.o.leaseMs, limit));
  }

  private track(p: Promise<void>) {
    const t = p.catch((err) => this.log.error({ err }, 'webhook delivery error')).finally(() => { this.inflight.delete(t); this.wake?.(); });
    this.inflight.add(t);
  }

  /** Until notified, a slot frees up, the next row is due, or the poll interval passes. */
  private sleep(): Promise<void> {
    const next = this.inflight.size < this.o.concurrency ? store.nextDueAt(this.ctx.db) : null;
    const ms = next === null ? this.o.pollMs : Math.max(0, Math.min(this.o.pollMs, next - this.ctx.now()));
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() { clearTimeout(timer); resolve(); }
      this.wake = () => { this.wake = null; done(); };
    });
  }

  private async deliver(seq: number): Promise<void> {
    const d = store.deliveryBySeq(this.ctx.db, seq);
    const e = d && store.endpointBySeq(this.ctx.db, d.endpoint_seq);
    if (!d || !e || d.status !== 'pending') return;
    const sentAt = this.ctx.now();
    const headers = signedHeaders(signingSecrets(e, sentAt), d.event_id, sentAt, d.payload);
    const allowPrivate = this.ctx.config.allowPrivateWebhooks;
    const lookup = guardedLookup(this.resolver, allowPrivate);
    const r = await postWebhook(e.url, headers, d.payload, { timeoutMs: this.o.timeoutMs, lookup, allowPrivate, signal: this.stopping.signal, userAgent: 'mta-webhooks/1', agents: this.agents });
    if (r.aborted) { store.releaseLease(this.ctx.db, seq, this.ctx.now()); return; }
    this.record(d, e, r);
  }

  private record(d: store.OutboxRow, e: store.EndpointRow, r: PostResult): void {
    const now = this.ctx.now();
    const attempt = d.attempts + 1;
    let verdict: Verdict = r.blocked ? 'failed' : verdictOf(r.statusCode);
    const delay = verdict === 'retry' ? retryDelayMs(attempt, this.ctx.config.webhookRetryMinSeconds) : null;
    if (verdict === 'retry' && delay === null) verdict = 'failed';
    const status = verdict === 'retry' ? 'pending' : verdict;
    tx(this.ctx.db, () => {
      const ok = store.recordAttempt(this.ctx.db, {
        delivery_seq: d.seq, attempt, status_code: r.statusCode, response_snippet: r.snippet, error: r.error,
        duration_ms: r.durationMs, next_retry_at: delay === null ? null : now + delay, created_at: now,
      }, status);
      if (!ok) return;
      if (verdict === 'succeeded') store.endpointSucceeded(this.ctx.db, e.seq);
      else this.failed(e.seq, now, verdict === 'failed');
    });
    this.log.debug({ delivery: d.id, endpoint: e.id, attempt, status: r.statusCode, error: r.error, verdict }, 'webhook attempt');
  }

  /** Counts a failure against the endpoint and disables it when it has been failing for days. */
  private failed(endpointSeq: number, now: number, ended: boolean): void {
    store.endpointFailed(this.ctx.db, endpointSeq, now, ended);
    const e = store.endpointBySeq(this.ctx.db, endpointSeq)!;
    let reason: string | null = null;
    if (e.failing_since !== null && now - e.failing_since >= DISABLE_AFTER_FAILING_MS) {
      reason = `every delivery failed since ${new Date(e.failing_since).toISOString()} (over 3 days)`;
    } else if (e.consecutive_failed >= DISABLE_AFTER_FAILED_DELIVERIES) {
      reason = `${e.consecutive_failed} deliveries in a row failed`;
    }
    if (reason === null || e.enabled !== 1) return;
    store.disableEndpoint(this.ctx.db, endpointSeq, reason, now);
    store.failPending(this.ctx.db, endpointSeq, 'endpoint disabled', now);
    this.log.warn({ endpoint: e.id, reason }, 'webhook endpoint disabled');
  }

  private prune(): void {
    const now = this.ctx.now();
    if (now - this.lastPrune < 3600_000) return;
    this.lastPrune = now;
    store.pruneDeliveries(this.ctx.db, now - RETENTION_MS, 5000);
  }
}
