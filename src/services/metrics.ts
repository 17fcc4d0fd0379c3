// What /metrics reads from the store at scrape time (queue depths), and the event hook its counters
// hang off. No team data.
import { countDueDeliveries, countPendingDeliveries, oldestDueAt } from '../store/emails.js';
import { onEvent, type EventListener } from '../store/events.js';
import { countPendingOutbox } from '../store/webhooks.js';
import { storeCounters } from '../store/db.js';
import { runPlan } from '../store/op.js';
import type { Ctx } from './context.js';

/** PostgreSQL engine counters (null on SQLite). */
export const storeWork = (ctx: Ctx) => storeCounters(ctx.db);
export const pendingDeliveries = (ctx: Ctx): Promise<number> => runPlan(countPendingDeliveries(ctx.db));
export const dueDeliveries = (ctx: Ctx): Promise<number> => runPlan(countDueDeliveries(ctx.db, ctx.now()));
/** Seconds the longest-waiting due recipient has been due (0 when none is): the queue's lag. */
export async function dueLagSeconds(ctx: Ctx): Promise<number> {
  const now = ctx.now();
  const at = await runPlan(oldestDueAt(ctx.db, now));
  return at === null ? 0 : Math.max(0, (now - Number(at)) / 1000);
}
export const pendingOutboxRows = (ctx: Ctx): Promise<number> => runPlan(countPendingOutbox(ctx.db));

/** Calls `fn` for every event appended (inside its transaction; keep it cheap and never throw). */
export const onEmailEvent = (ctx: Ctx, fn: EventListener): void => onEvent(ctx.db, fn);
