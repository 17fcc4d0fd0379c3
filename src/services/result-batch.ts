// The delivery loop's results as plans (outbound/results.ts ResultSink runs them in its transactions): a batch of
// many emails' outcomes written together, or one email's alone (after the batch failed). Each also drops the leases
// of the recipients it settles, and counts the per-site and TLS-report figures, in the same transaction.
import { synced, transaction, type Gen } from '../store/op.js';
import { locksOnPool, runLocking } from '../store/pg/plan-driver.js';
import { settleClaim } from '../store/queue.js';
import type { Ctx } from './context.js';
import { countSiteOutcomesPlan } from './stats.js';
import type { CounterTally } from './counter-tally.js';
import { countTlsOutcomesPlan, type TlsTally } from './tls-reports.js';
import {
  applyOutcomesPlan,
  OutcomeBatch,
  readOutcomesAheadPlan,
  verifyOutcomesPlan,
  type OutcomeReads,
  type OutcomeWrite,
  type RecipientOutcome,
} from './transition.js';

/** One email's attempt results as the loop pushed them (or several merged, one email each: `siteOf`). */
export interface ResultItem {
  emailSeq: number;
  outcomes: RecipientOutcome[];
  ids: number[];
  site?: string;
  /** Merged items (perEmail): the site of each recipient, by id. */
  siteOf?: Map<number, string>;
  /** What the loop knows of the email and all its recipients (knownReads): PostgreSQL writes without reading them. */
  known?: OutcomeReads;
  /** The attempt's recipient domain and TLS plan: its TLS outcome is counted for TLS reports (RFC 8460). */
  tls?: TlsTally;
}

/** Where the loop took each recipient of an item (per-site statistics). */
export function sitesOf(item: ResultItem): Map<number, string> | undefined {
  if (item.siteOf) return item.siteOf;
  return item.site ? new Map(item.outcomes.map((o) => [o.deliveryId, item.site!])) : undefined;
}

/**
 * A batch in one transaction: `byEmail` (one item per email) applied, `items` (as pushed) counted. PostgreSQL: the
 * batch's emails and deliveries read in one round trip, its writes sent set-wise (checked by the server before the
 * COMMIT), not two round trips per email. One apply per email: its reads would not see its own earlier writes,
 * which wait for verifyOutcomes.
 */
export function* resultBatchPlan(ctx: Ctx, byEmail: readonly ResultItem[], items: readonly ResultItem[]): Gen<void> {
  const ahead = yield* readOutcomesAheadPlan(
    ctx,
    byEmail.filter((i) => i.outcomes.length).map((i) => ({ seq: i.emailSeq, known: i.known })),
  );
  const writes = new OutcomeBatch();
  for (const item of byEmail) {
    const pre = yield* ahead(item.emailSeq);
    yield* applyItem(ctx, item, { pre, writes, sites: sitesOf(item) });
  }
  for (const item of items) yield* countSite(ctx, item, writes.tally);
  yield* countTlsOutcomesPlan(ctx, items);
  yield* verifyOutcomesPlan(ctx, writes, true);
}

/** One email's results, each write checked at once (the batch failed as a whole). */
export function* resultItemPlan(ctx: Ctx, item: ResultItem): Gen<void> {
  yield* applyItem(ctx, item, { sites: sitesOf(item) });
  yield* countSite(ctx, item);
  yield* countTlsOutcomesPlan(ctx, [item]);
}

/** The loop's result transactions are synchronous (lightTx, lightTxLater): these run the plans inside them. */
export const writeResultBatch = synced(resultBatchPlan);
export const writeResultItem = synced(resultItemPlan);

/**
 * PostgreSQL with the credit lock's holders on the pool (MTA_PG_POOLED_TURNS on): the result transactions run there
 * (a refund takes the team's credit lock a submit turn may hold), each answered once its COMMIT is, committed
 * without waiting for the WAL flush (lightTx's bargain). Otherwise the synchronous forms above, in lightTx.
 */
export const resultsOnPool = (ctx: Ctx): boolean => locksOnPool(ctx.db);
export const writeResultBatchPooled = (ctx: Ctx, byEmail: readonly ResultItem[], items: readonly ResultItem[]) =>
  runLocking(
    ctx.db,
    transaction(ctx.db, () => resultBatchPlan(ctx, byEmail, items)),
    { durable: false, kind: 'result' },
  );
export const writeResultItemPooled = (ctx: Ctx, item: ResultItem) =>
  runLocking(
    ctx.db,
    transaction(ctx.db, () => resultItemPlan(ctx, item)),
    { durable: false, kind: 'result' },
  );

function* applyItem(ctx: Ctx, item: ResultItem, batch?: OutcomeWrite): Gen<void> {
  const settled = new Set<number>();
  if (item.outcomes.length) yield* applyOutcomesPlan(ctx, item.emailSeq, item.outcomes, settled, batch);
  for (const id of item.ids) if (!settled.has(id)) yield* settleClaim(ctx.db, id);
}

function* countSite(ctx: Ctx, item: ResultItem, tally?: CounterTally): Gen<void> {
  if (item.site)
    yield* countSiteOutcomesPlan(
      ctx,
      item.site,
      item.outcomes.map((o) => o.event),
      tally,
    );
}
