// The operator's alert sender: posts the operator_alerts outbox (ip.alert and domain.alert events for
// MTA_ALERT_WEBHOOK_URL, services/alerts.ts) one row at a time, signed with MTA_ALERT_WEBHOOK_SECRET (Standard
// Webhooks) through the same SSRF-guarded POST as team endpoints, retried on the webhook retry schedule.
import type { Resolver } from 'node:dns/promises';
import type { Logger } from 'pino';
import { signedHeaders } from '../core/webhook-signing.js';
import { operatorAlertsDue, pruneOperatorAlertRows, recordOperatorAlert } from '../services/alerts.js';
import type { Ctx } from '../services/context.js';
import type { Component } from '../types/component.js';
import { postWebhook } from './post.js';
import { guardedLookup } from './ssrf.js';

const POLL_MS = 1000;
const TIMEOUT_MS = 10_000;

export class AlertSender implements Component {
  readonly name = 'alert-webhook';
  private running = false;
  private loop: Promise<void> | null = null;
  private stopping = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private lastPrune = 0;
  private readonly log: Logger;

  constructor(
    private ctx: Ctx,
    private resolver: Resolver,
  ) {
    this.log = ctx.log.child({ component: 'alert-webhook' });
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
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        if (this.ctx.now() - this.lastPrune > 3600_000) {
          this.lastPrune = this.ctx.now();
          pruneOperatorAlertRows(this.ctx);
        }
        for (const row of operatorAlertsDue(this.ctx, 8, TIMEOUT_MS + 30_000)) await this.send(row);
      } catch (err) {
        this.log.error({ err }, 'alert webhook loop error');
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, POLL_MS);
      });
      if (this.timer) clearTimeout(this.timer);
    }
  }

  private async send(row: { seq: number; event_id: string; payload: string; attempts: number }): Promise<void> {
    const { alertWebhookUrl: url, alertWebhookSecret: secret, allowPrivateWebhooks } = this.ctx.config;
    if (!url || !secret) return;
    const headers = signedHeaders([secret], row.event_id, this.ctx.now(), row.payload);
    const r = await postWebhook(url, headers, row.payload, {
      timeoutMs: TIMEOUT_MS,
      lookup: guardedLookup(this.resolver, allowPrivateWebhooks),
      allowPrivate: allowPrivateWebhooks,
      signal: this.stopping.signal,
      userAgent: 'mta-webhooks/1',
    });
    const outcome = recordOperatorAlert(this.ctx, row, r);
    if (outcome !== 'succeeded')
      this.log.warn({ event_id: row.event_id, status: r.statusCode, error: r.error, outcome }, 'alert webhook attempt');
  }
}
