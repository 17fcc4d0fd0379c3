// The outbox dispatcher: claims due outbox rows in batches under a lease, POSTs them signed with bounded
// concurrency; services/webhook-outbox.ts records each attempt, schedules retries and disables failing endpoints.
// It also posts the operator's alert outbox (MTA_ALERT_WEBHOOK_URL, services/alerts.ts) the same way.
import type { Resolver } from 'node:dns/promises';
import type { Logger } from 'pino';
import { signedHeaders } from '../core/webhook-signing.js';
import {
  claimOutbox,
  nextOutboxDueAt,
  outboxRowToSend,
  pruneOutbox,
  recordOutboxAttempt,
  releaseOutboxRow,
} from '../services/webhook-outbox.js';
import { operatorAlertsDue, pruneOperatorAlertRows, recordOperatorAlert } from '../services/alerts.js';
import type { OperatorAlertRow } from '../services/alerts.js';
import type { Ctx } from '../services/context.js';
import { outageLog } from '../services/store-health.js';
import type { Component } from '../types/component.js';
import { Agents, postWebhook } from './post.js';
import { guardedLookup } from './ssrf.js';

export interface DispatcherOptions {
  concurrency?: number;
  timeoutMs?: number;
  leaseMs?: number;
  pollMs?: number;
}

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
  private readonly outage: ReturnType<typeof outageLog>;
  private readonly o: Required<DispatcherOptions>;

  constructor(
    private ctx: Ctx,
    private resolver: Resolver,
    opts: DispatcherOptions = {},
  ) {
    this.log = ctx.log.child({ component: 'webhooks' });
    this.outage = outageLog(this.log, 'webhook dispatcher');
    const timeoutMs = opts.timeoutMs ?? 10_000;
    this.o = {
      concurrency: opts.concurrency ?? 16,
      timeoutMs,
      leaseMs: opts.leaseMs ?? timeoutMs + 30_000,
      pollMs: opts.pollMs ?? 1000,
    };
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
      if (this.ctx.db.inTransaction) {
        await new Promise((r) => setImmediate(r));
        continue;
      }
      try {
        await this.prune();
        const free = this.o.concurrency - this.inflight.size;
        const claimed = free > 0 ? await this.claim(free) : [];
        for (const seq of claimed) this.track(this.attempt(seq));
        const alerts = free > claimed.length ? await this.claimAlerts(free - claimed.length) : [];
        for (const row of alerts) this.track(this.attemptAlert(row));
        this.outage.ok();
        if (claimed.length + alerts.length > 0 && claimed.length + alerts.length === free) continue;
      } catch (err) {
        // The store unavailable (its database away): logged once, polled again (the store backs off reconnecting).
        if (!this.outage.failed(err)) this.log.error({ err }, 'dispatch loop error');
      }
      await this.sleep();
    }
  }

  private claim(limit: number): Promise<number[]> {
    return claimOutbox(this.ctx, limit, this.o.leaseMs);
  }

  /** Due rows of the operator's alert outbox (MTA_ALERT_WEBHOOK_URL), none when it is not set. */
  private async claimAlerts(limit: number): Promise<OperatorAlertRow[]> {
    return this.ctx.config.alertWebhookUrl ? operatorAlertsDue(this.ctx, limit, this.o.leaseMs) : [];
  }

  private track(p: Promise<void>) {
    const t = p
      .catch((err) => this.log.error({ err }, 'webhook delivery error'))
      .finally(() => {
        this.inflight.delete(t);
        this.wake?.();
      });
    this.inflight.add(t);
  }

  /** Until notified, a slot frees up, the next row is due, or the poll interval passes. */
  private async sleep(): Promise<void> {
    let next: number | null = null;
    try {
      if (this.inflight.size < this.o.concurrency) next = await nextOutboxDueAt(this.ctx);
    } catch (err) {
      if (!this.outage.failed(err)) this.log.error({ err }, 'next outbox row unknown');
    }
    const ms = next === null ? this.o.pollMs : Math.max(0, Math.min(this.o.pollMs, next - this.ctx.now()));
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = null;
        done();
      };
    });
  }

  /** One guarded POST (webhooks/post.ts), on the kept-alive connections, aborted when the dispatcher stops. */
  private post(url: string, headers: Record<string, string>, body: string) {
    const allowPrivate = this.ctx.config.allowPrivateWebhooks;
    return postWebhook(url, headers, body, {
      timeoutMs: this.o.timeoutMs,
      lookup: guardedLookup(this.resolver, allowPrivate),
      allowPrivate,
      signal: this.stopping.signal,
      userAgent: 'mta-webhooks/1',
      agents: this.agents,
    });
  }

  /** One POST of one claimed row, and its record. */
  private async attempt(seq: number): Promise<void> {
    const sentAt = this.ctx.now();
    const row = await outboxRowToSend(this.ctx, seq, sentAt);
    if (!row) return;
    const r = await this.post(row.url, signedHeaders(row.secrets, row.eventId, sentAt, row.payload), row.payload);
    if (r.aborted) {
      await releaseOutboxRow(this.ctx, seq);
      return;
    }
    const rec = await recordOutboxAttempt(this.ctx, seq, r);
    if (!rec) return;
    this.log.debug(
      {
        delivery: row.id,
        endpoint: row.endpointId,
        attempt: rec.attempt,
        status: r.statusCode,
        error: r.error,
        verdict: rec.verdict,
      },
      'webhook attempt',
    );
    if (rec.disabled) this.log.warn({ endpoint: row.endpointId, reason: rec.disabled }, 'webhook endpoint disabled');
  }

  /** One POST of an operator alert to MTA_ALERT_WEBHOOK_URL, signed with MTA_ALERT_WEBHOOK_SECRET, and its record. */
  private async attemptAlert(row: OperatorAlertRow): Promise<void> {
    const { alertWebhookUrl: url, alertWebhookSecret: secret } = this.ctx.config;
    if (!url || !secret) return;
    const r = await this.post(url, signedHeaders([secret], row.event_id, this.ctx.now(), row.payload), row.payload);
    const verdict = await recordOperatorAlert(this.ctx, row, r);
    if (verdict !== 'succeeded' && verdict !== 'released')
      this.log.warn({ event_id: row.event_id, status: r.statusCode, error: r.error, verdict }, 'alert webhook attempt');
  }

  private async prune(): Promise<void> {
    const now = this.ctx.now();
    if (now - this.lastPrune < 3600_000) return;
    this.lastPrune = now;
    await pruneOutbox(this.ctx);
    await pruneOperatorAlertRows(this.ctx);
  }
}
