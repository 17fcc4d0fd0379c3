// What /metrics reads from the store at scrape time (queue depths), and the event hook its counters
// hang off. No team data.
import { countDueDeliveries, countPendingDeliveries, oldestDueAt } from '../store/emails.js';
import { onEvent, type EventListener } from '../store/events.js';
import { countPendingOutbox } from '../store/webhooks.js';
import { storeCounters } from '../store/db.js';
import { poolOf, POOL_KINDS, runPooled, type PoolKindStats } from '../store/pg/plan-driver.js';
export type { PoolKindStats };
import type { Ctx } from './context.js';

/** PostgreSQL engine counters (null on SQLite). */
export const storeWork = (ctx: Ctx) => storeCounters(ctx.db);
/**
 * PostgreSQL with a pool (MTA_PG_POOL_SIZE > 0): per kind of use (turn, claim, result, other), the connections taken,
 * the time waited for them and held, the statements and round trips sent on them; and the connection-seconds held
 * (null without a pool).
 */
export function poolWork(ctx: Ctx): { kinds: [string, PoolKindStats][]; busySeconds: number } | null {
  const p = poolOf(ctx.db);
  return p ? { kinds: POOL_KINDS.map((k) => [k, p.byKind[k]]), busySeconds: p.busySeconds } : null;
}
// Each one statement (a count can take a while on a long queue): on PostgreSQL with a pool, awaited there, so a scrape
// never holds the event loop; elsewhere at once underneath.
export const pendingDeliveries = (ctx: Ctx): Promise<number> =>
  runPooled(ctx.db, countPendingDeliveries(ctx.db), 'other');
export const dueDeliveries = (ctx: Ctx): Promise<number> =>
  runPooled(ctx.db, countDueDeliveries(ctx.db, ctx.now()), 'other');
/** Seconds the longest-waiting due recipient has been due (0 when none is): the queue's lag. */
export async function dueLagSeconds(ctx: Ctx): Promise<number> {
  const now = ctx.now();
  const at = await runPooled(ctx.db, oldestDueAt(ctx.db, now), 'other');
  return at === null ? 0 : Math.max(0, (now - Number(at)) / 1000);
}
export const pendingOutboxRows = (ctx: Ctx): Promise<number> => runPooled(ctx.db, countPendingOutbox(ctx.db), 'other');

/** Calls `fn` for every event appended (inside its transaction; keep it cheap and never throw). */
export const onEmailEvent = (ctx: Ctx, fn: EventListener): void => onEvent(ctx.db, fn);
