// The delivery loop's results as plans (outbound/results.ts ResultSink runs them in its transactions): a batch of
// many emails' outcomes written together, or one email's alone (after the batch failed). Each also drops the leases
// of the recipients it settles, and counts the per-site and TLS-report figures, in the same transaction.
import { synced, transaction, type Gen } from '../store/op.js';
import { locksOnPool, runLocking } from '../store/pg/plan-driver.js';
import { settleClaim, settleClaims } from '../store/queue.js';
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
 * The delivery loop's claims by recipient id: the lease token each result was made under (outbound/claims.ts). With
 * it, a result is written only while its recipient's row still carries that token (OutcomeWrite.leases); without it
 * (tests that write results for rows they did not claim), as before.
 */
export type ClaimTokens = ReadonlyMap<number, number | null>;

/**
 * A batch in one transaction: `byEmail` (one item per email) applied, `items` (as pushed) counted. PostgreSQL: the
 * batch's emails and deliveries read in one round trip, its writes sent set-wise (checked by the server before the
 * COMMIT), not two round trips per email. One apply per email: its reads would not see its own earlier writes,
 * which wait for verifyOutcomes. Answers the recipients whose claim was gone (nothing of their outcome written).
 */
export function* resultBatchPlan(
  ctx: Ctx,
  byEmail: readonly ResultItem[],
  items: readonly ResultItem[],
  leases?: ClaimTokens,
): Gen<number[]> {
  const ahead = yield* readOutcomesAheadPlan(
    ctx,
    byEmail.filter((i) => i.outcomes.length).map((i) => ({ seq: i.emailSeq, known: i.known })),
  );
  const writes = new OutcomeBatch();
  const lost = new Set<number>();
  for (const item of byEmail) {
    const pre = yield* ahead(item.emailSeq);
    yield* applyItem(ctx, item, { pre, writes, sites: sitesOf(item), leases, lost });
  }
  for (const item of items) yield* countSite(ctx, item, lost, writes.tally);
  yield* countTlsOutcomesPlan(ctx, kept(items, lost));
  yield* verifyOutcomesPlan(ctx, writes, true);
  return [...lost];
}

/** One email's results, each write checked at once (the batch failed as a whole); its recipients whose claim was gone. */
export function* resultItemPlan(ctx: Ctx, item: ResultItem, leases?: ClaimTokens): Gen<number[]> {
  const lost = new Set<number>();
  yield* applyItem(ctx, item, { sites: sitesOf(item), leases, lost });
  yield* countSite(ctx, item, lost);
  yield* countTlsOutcomesPlan(ctx, kept([item], lost));
  return [...lost];
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
export const writeResultBatchPooled = (
  ctx: Ctx,
  byEmail: readonly ResultItem[],
  items: readonly ResultItem[],
  leases?: ClaimTokens,
) =>
  runLocking(
    ctx.db,
    transaction(ctx.db, () => resultBatchPlan(ctx, byEmail, items, leases)),
    { durable: false, kind: 'result' },
  );
export const writeResultItemPooled = (ctx: Ctx, item: ResultItem, leases?: ClaimTokens) =>
  runLocking(
    ctx.db,
    transaction(ctx.db, () => resultItemPlan(ctx, item, leases)),
    { durable: false, kind: 'result' },
  );

/** The item's outcomes applied, and the claims of its other recipients settled (only those still this node's). */
function* applyItem(ctx: Ctx, item: ResultItem, batch: OutcomeWrite & { lost: Set<number> }): Gen<void> {
  const settled = new Set<number>();
  if (item.outcomes.length) yield* applyOutcomesPlan(ctx, item.emailSeq, item.outcomes, settled, batch);
  const rest = item.ids.filter((id) => !settled.has(id) && !batch.lost.has(id));
  const { leases } = batch;
  if (!leases) for (const id of rest) yield* settleClaim(ctx.db, id);
  else
    yield* settleClaims(
      ctx.db,
      rest,
      rest.map((id) => leases.get(id) ?? null),
    );
}

/** The items without the outcomes of recipients whose claim was gone (they count for nothing). */
const kept = (items: readonly ResultItem[], lost: ReadonlySet<number>): readonly ResultItem[] =>
  lost.size ? items.map((i) => ({ ...i, outcomes: i.outcomes.filter((o) => !lost.has(o.deliveryId)) })) : items;

function* countSite(ctx: Ctx, item: ResultItem, lost: ReadonlySet<number>, tally?: CounterTally): Gen<void> {
  if (item.site)
    yield* countSiteOutcomesPlan(
      ctx,
      item.site,
      item.outcomes.filter((o) => !lost.has(o.deliveryId)).map((o) => o.event),
      tally,
    );
}
