// The hourly retention job: drops idempotency records older than 24 hours and inbound reports older
// than 30 days, in small batches so the write lock is never held long. A Component; runs never overlap.
import { schedule, type ScheduledTask } from 'node-cron';
import type { Component } from '../service.js';
import type { Ctx } from '../services/context.js';
import { sql, tx } from '../store/db.js';
import { IDEMPOTENCY_TTL_MS } from '../store/idempotency.js';

export const INBOUND_REPORT_TTL_MS = 30 * 24 * 3600 * 1000;
const BATCH = 5000;

function purge(ctx: Ctx, text: string, before: number): number {
  let total = 0;
  for (;;) {
    const n = tx(ctx.db, () => sql(ctx.db, text).run(before, BATCH).changes);
    total += n;
    if (n < BATCH) return total;
  }
}

/** One retention pass; returns how many rows each table lost. */
export function runRetention(ctx: Ctx): { idempotency: number; inbound_reports: number } {
  const now = ctx.now();
  return {
    idempotency: purge(ctx, 'DELETE FROM idempotency WHERE (team_id, key) IN (SELECT team_id, key FROM idempotency WHERE created_at <= ? LIMIT ?)', now - IDEMPOTENCY_TTL_MS),
    inbound_reports: purge(ctx, 'DELETE FROM inbound_reports WHERE seq IN (SELECT seq FROM inbound_reports WHERE created_at <= ? LIMIT ?)', now - INBOUND_REPORT_TTL_MS),
  };
}

export function retentionJob(ctx: Ctx, expr = '17 * * * *'): Component {
  const log = ctx.log.child({ component: 'retention' });
  let task: ScheduledTask | null = null;
  return {
    name: 'retention',
    async start() {
      task = schedule(expr, () => {
        try { log.info(runRetention(ctx), 'retention pass'); } catch (err) { log.error({ err }, 'retention pass failed'); }
      }, { name: 'retention', noOverlap: true });
    },
    async stop() { await task?.stop(); await task?.destroy(); task = null; },
  };
}
