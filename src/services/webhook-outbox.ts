// The webhook outbox as the dispatcher works it: claim due rows under a lease, load a row to send with
// its endpoint and signing secrets, record an attempt (retry schedule, endpoint failure counting, disabling), prune.
import {
  retryDelayMs,
  verdictOf,
  DISABLE_AFTER_FAILING_MS,
  DISABLE_AFTER_FAILED_DELIVERIES,
  type AttemptVerdict,
} from '../core/webhook-retry.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { runLocking, runPooled } from '../store/pg/plan-driver.js';
import * as store from '../store/webhooks.js';
import { signingSecrets } from './webhooks.js';
import type { Ctx } from './context.js';

/** Ended rows are kept this long for the delivery log. */
export const OUTBOX_RETENTION_MS = 30 * 24 * 3600 * 1000;

export interface RowToSend {
  seq: number;
  id: string;
  eventId: string;
  payload: string;
  url: string;
  endpointId: string;
  secrets: string[];
}
/** What one POST came to (webhooks/post.ts PostResult, minus the transport details). */
export interface AttemptOutcome {
  statusCode: number | null;
  snippet: string | null;
  error: string | null;
  durationMs: number;
  blocked: boolean;
}
export interface AttemptRecord {
  attempt: number;
  verdict: AttemptVerdict;
  disabled: string | null;
}

// PostgreSQL: the dispatcher's statements run on the pool (runPooled, runLocking), not on the synchronous
// connection, whose every round trip holds the event loop: 10,000 webhooks of a purge sent meanwhile took the API's
// p99 during it from ~60 ms to ~780 ms (queue-purge.test, session 21). Without a pool (SQLite, MTA_PG_POOLED_TURNS=off)
// as before.

/** Claims up to `limit` due rows (their next_attempt_at moves to the lease's end); their seqs. */
export function claimOutbox(ctx: Ctx, limit: number, leaseMs: number): Promise<number[]> {
  const now = ctx.now();
  // A lease: lost in a crash, the rows are claimed again when it would have ended (at least once, as always).
  return runLocking(
    ctx.db,
    transaction(ctx.db, () => store.claimDue(ctx.db, now, now + leaseMs, limit)),
    {
      durable: false,
      kind: 'other',
    },
  );
}

/** When the next row falls due (ms), or null when none is pending. */
export const nextOutboxDueAt = (ctx: Ctx): Promise<number | null> =>
  runPooled(ctx.db, store.nextDueAt(ctx.db), 'other');

/** A claimed row still pending, with what is needed to send it now; null when it is gone or ended. */
export const outboxRowToSend = (ctx: Ctx, seq: number, sentAt: number): Promise<RowToSend | null> =>
  runPooled(ctx.db, rowToSendPlan(ctx, seq, sentAt), 'other');
function* rowToSendPlan(ctx: Ctx, seq: number, sentAt: number): Gen<RowToSend | null> {
  const row = yield* store.outboxRowBySeq(ctx.db, seq);
  const e = row && (yield* store.endpointBySeq(ctx.db, row.endpoint_seq));
  if (!row || !e || row.status !== 'pending') return null;
  return {
    seq,
    id: row.id,
    eventId: row.event_id,
    payload: row.payload,
    url: e.url,
    endpointId: e.id,
    secrets: signingSecrets(e, sentAt),
  };
}

/** The attempt did not happen (the dispatcher is stopping): the row is due again now. */
export async function releaseOutboxRow(ctx: Ctx, seq: number): Promise<void> {
  await runPooled(ctx.db, store.releaseLease(ctx.db, seq, ctx.now()), 'other');
}

/**
 * Records one attempt on a still-pending row in one transaction: 2xx ends it, a retryable answer schedules the
 * next attempt (or ends it failed when the schedule is exhausted), and a failure counts against the endpoint.
 */
export const recordOutboxAttempt = (ctx: Ctx, seq: number, r: AttemptOutcome): Promise<AttemptRecord | null> =>
  runLocking(
    ctx.db,
    transaction(ctx.db, () => recordPlan(ctx, seq, r)),
    { durable: true, kind: 'other' },
  );
function* recordPlan(ctx: Ctx, seq: number, r: AttemptOutcome): Gen<AttemptRecord | null> {
  const row = yield* store.outboxRowBySeq(ctx.db, seq);
  if (!row || row.status !== 'pending') return null;
  const now = ctx.now();
  const attempt = row.attempts + 1;
  let verdict: AttemptVerdict = r.blocked ? 'failed' : verdictOf(r.statusCode);
  const delay = verdict === 'retry' ? retryDelayMs(attempt, ctx.config.webhookRetryMinSeconds) : null;
  if (verdict === 'retry' && delay === null) verdict = 'failed';
  const ok = yield* store.recordAttempt(
    ctx.db,
    {
      delivery_seq: seq,
      attempt,
      status_code: r.statusCode,
      response_snippet: r.snippet,
      error: r.error,
      duration_ms: r.durationMs,
      next_retry_at: delay === null ? null : now + delay,
      created_at: now,
    },
    verdict === 'retry' ? 'pending' : verdict,
  );
  if (!ok) return null;
  if (verdict === 'succeeded') {
    yield* store.endpointSucceeded(ctx.db, row.endpoint_seq);
    return { attempt, verdict, disabled: null };
  }
  return { attempt, verdict, disabled: yield* endpointFailed(ctx, row.endpoint_seq, now, verdict === 'failed') };
}

/** Counts a failure against the endpoint and disables it when it has been failing for days; the reason if it was. */
function* endpointFailed(ctx: Ctx, endpointSeq: number, now: number, ended: boolean): Gen<string | null> {
  yield* store.endpointFailed(ctx.db, endpointSeq, now, ended);
  const e = (yield* store.endpointBySeq(ctx.db, endpointSeq))!;
  let reason: string | null = null;
  if (e.failing_since !== null && now - e.failing_since >= DISABLE_AFTER_FAILING_MS) {
    reason = `every delivery failed since ${new Date(e.failing_since).toISOString()} (over 3 days)`;
  } else if (e.consecutive_failed >= DISABLE_AFTER_FAILED_DELIVERIES) {
    reason = `${e.consecutive_failed} deliveries in a row failed`;
  }
  if (reason === null || e.enabled !== 1) return null;
  yield* store.disableEndpoint(ctx.db, endpointSeq, reason, now);
  yield* store.failPending(ctx.db, endpointSeq, 'endpoint disabled', now);
  return reason;
}

/** Drops rows that ended more than OUTBOX_RETENTION_MS ago (at most `limit`). */
export const pruneOutbox = (ctx: Ctx, limit = 5000): Promise<number> =>
  runPlan(ctx.db, store.pruneOutbox(ctx.db, ctx.now() - OUTBOX_RETENTION_MS, limit));
