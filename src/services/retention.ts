// Retention policy: idempotency records live 24 hours, inbound reports 30 days. One pass deletes
// what has expired (in small batches) and says how many rows each table lost.
import { IDEMPOTENCY_TTL_MS } from '../store/idempotency.js';
import { purgeIdempotencyBefore, purgeInboundReportsBefore } from '../store/retention.js';
import type { Ctx } from './context.js';

export const INBOUND_REPORT_TTL_MS = 30 * 24 * 3600 * 1000;

/** One retention pass; returns how many rows each table lost. */
export function runRetention(ctx: Ctx): { idempotency: number; inbound_reports: number } {
  const now = ctx.now();
  return {
    idempotency: purgeIdempotencyBefore(ctx.db, now - IDEMPOTENCY_TTL_MS),
    inbound_reports: purgeInboundReportsBefore(ctx.db, now - INBOUND_REPORT_TTL_MS),
  };
}
