// Persists attempt results in batches: many emails' outcomes in ONE transaction (applyOutcomes,
// then the lease is dropped), flushed a few ms after the first result or when the batch is full.
// PostgreSQL: the batch's writes and COMMIT are sent without waiting (lightTxLater), the server checking that no
// recipient changed since it was read; this thread goes on (HTTP requests, sends) while the server writes, and the
// loop hears of the batch once its answer is read. A batch the server refused is written one email at a time.
// PostgreSQL with the credit lock's holders on the pool (MTA_PG_POOLED_TURNS on, the default): each batch is a
// transaction on the pool (its refunds take the team's credit lock, which a submit turn there may hold), one batch at
// a time (the next one sees its writes, as on one connection), the results pushed meanwhile gathering for the next.
import { lightTx as tx, lightTxLater } from '../services/delivery.js';
import { isOutcomeRace, type OutcomeReads, type RecipientOutcome } from '../services/transition.js';
import type { Ctx } from '../services/context.js';
import type { TlsTally } from '../services/tls-reports.js';
import {
  resultsOnPool,
  sitesOf,
  writeResultBatch,
  writeResultBatchPooled,
  writeResultItem,
  writeResultItemPooled,
  type ClaimTokens,
  type ResultItem as Item,
} from '../services/result-batch.js';
import { isStoreUnavailable, outageLog } from '../services/store-health.js';

/** While the store is unavailable (its database away), results wait in memory and are written again this often. */
export const RESULT_RETRY_MS = 1000;

export class ResultSink {
  private pending: Item[] = [];
  private count = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Settles once the last batch sent is written (its COMMIT's answer read, and the loop told). */
  private written: Promise<void> = Promise.resolve();
  /** On the pool: a batch is being written; a flush meanwhile waits for it (`again`). */
  private flying = false;
  private again = false;
  private outage: ReturnType<typeof outageLog>;
  /** Results not written because their recipient's claim was gone by then (another node's, or released). */
  lost = 0;

  constructor(
    private ctx: Ctx,
    /** `due`: some of them may be due again later (deferred, or settled without an outcome). */
    private onFlushed: (ids: number[], due: boolean) => void,
    private opts: {
      delayMs: number;
      max: number;
      /**
       * The lease token this node holds on a recipient (outbound/claims.ts), read when its result is written: the
       * write happens only while the row still carries it. Without it (tests), results are written unchecked.
       */
      leaseOf?: (id: number) => number | null;
    } = { delayMs: 10, max: 200 },
  ) {
    this.outage = outageLog(ctx.log.child({ component: 'delivery' }), 'delivery results');
  }

  /**
   * Queues the outcomes of one email's claimed deliveries `ids` (outcomes may be empty: just settle), at `site` if
   * known (per-site counters); `known`: the email and all its recipients as the loop knows them (knownReads); `tls`:
   * count the outcomes' TLS for TLS reports (one SMTP attempt's).
   */
  push(
    emailSeq: number,
    outcomes: RecipientOutcome[],
    ids: number[],
    site?: string,
    known?: OutcomeReads,
    tls?: TlsTally,
  ): void {
    if (this.closed) return;
    this.pending.push({ emailSeq, outcomes, ids, site, known, tls });
    this.count += ids.length;
    if (this.count >= this.opts.max) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.opts.delayMs);
  }

  /**
   * Writes everything pending now: on SQLite before this returns; on PostgreSQL the COMMIT may still be in flight
   * (settled(): when it is written). Either way the loop is told once the batch is written.
   */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.flying) {
      this.again = true;
      return;
    }
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    this.count = 0;
    let written!: () => void;
    this.written = new Promise((resolve) => (written = resolve));
    const leases = this.leasesOf(batch);
    if (resultsOnPool(this.ctx)) return void this.flushPooled(batch, leases, written);
    let lost: number[] = [];
    const finish = (err: unknown) => {
      if (err && this.outage.failed(err)) {
        this.retryLater(batch);
        return written();
      }
      if (!err) this.outage.ok();
      if (err) lost = this.oneByOne(batch, err, leases);
      this.claimsGone(lost, batch);
      this.onFlushed(
        batch.flatMap((i) => i.ids),
        isDue(batch),
      );
      written();
    };
    try {
      // One apply per email (services/result-batch.ts): the batch's reads in one round trip on PostgreSQL.
      const byEmail = [...perEmail(batch).values()];
      // The plan's answer is taken before `finish` runs (SQLite runs it at once; PostgreSQL once the COMMIT's answer is read).
      lightTxLater(this.ctx.db, () => (lost = writeResultBatch(this.ctx, byEmail, batch, leases)), finish);
    } catch (err) {
      finish(err);
    }
  }

  /** flush on the pool: the batch's transaction awaited, then the next batch if results came meanwhile. */
  private async flushPooled(batch: Item[], leases: ClaimTokens | undefined, written: () => void): Promise<void> {
    this.flying = true;
    let err: unknown = null;
    let lost: number[] = [];
    try {
      lost = await writeResultBatchPooled(this.ctx, [...perEmail(batch).values()], batch, leases);
    } catch (e) {
      err = e;
    }
    let retry = false;
    if (err && this.outage.failed(err)) {
      this.retryLater(batch);
      retry = true;
    } else {
      if (!err) this.outage.ok();
      else lost = await this.oneByOnePooled(batch, err, leases);
      this.claimsGone(lost, batch);
      this.onFlushed(
        batch.flatMap((i) => i.ids),
        isDue(batch),
      );
    }
    this.flying = false;
    // Results pushed while this batch was written go now (not while the store is away: with retryLater's timer).
    const again = this.again && !retry;
    this.again = false;
    if (again) this.flush();
    written();
  }

  /**
   * The store is unavailable: the results stay here (their recipients claimed, not sent again) and are written
   * once it is back, rather than left for their lease to end and sent twice.
   */
  private retryLater(items: Item[]): void {
    this.pending.unshift(...items);
    for (const i of items) this.count += i.ids.length;
    (this.timer ??= setTimeout(() => this.flush(), RESULT_RETRY_MS)).unref(); // no hold on a stopping process
  }

  /** Once the batches sent so far (and those they held back, on the pool) are written (tests; shutdown). */
  async settled(): Promise<void> {
    for (let w = this.written; ; w = this.written) {
      await w;
      if (w === this.written) return;
    }
  }

  /** Flushes, then drops anything pushed later (shutdown); settles once the last batch is written. */
  close(): Promise<void> {
    this.flush();
    this.closed = true;
    return this.settled();
  }

  /**
   * The lease tokens of the batch's recipients as this node holds them now (each result is written under its
   * recipient's claim, and only while the row still carries it).
   */
  private leasesOf(batch: readonly Item[]): ClaimTokens | undefined {
    const leaseOf = this.opts.leaseOf;
    if (!leaseOf) return undefined;
    return new Map(batch.flatMap((i) => i.ids.map((id) => [id, leaseOf(id)] as const)));
  }

  /**
   * Results written for nothing: their recipients had been claimed by another node once this node's lease ended (a
   * send or a result write that outlasted the lease), or released; the other node's outcome stands. Logged once per
   * batch, and counted.
   */
  private claimsGone(lost: readonly number[], batch: readonly Item[]): void {
    if (!lost.length) return;
    this.lost += lost.length;
    const gone = new Set(lost);
    const emails = [...new Set(batch.filter((i) => i.ids.some((id) => gone.has(id))).map((i) => i.emailSeq))];
    this.ctx.log.warn(
      { deliveries: lost, email_seqs: emails },
      'delivery results not recorded: the lease ended and the recipients were claimed again (another node sends them)',
    );
  }

  /** The batch failed as a whole: each email in a transaction of its own, each write checked at once. */
  private oneByOne(batch: readonly Item[], err: unknown, leases?: ClaimTokens): number[] {
    this.logBatchFailure(batch, err);
    const later: Item[] = [];
    const lost: number[] = [];
    for (const item of batch) {
      try {
        lost.push(...tx(this.ctx.db, () => writeResultItem(this.ctx, item, leases)));
      } catch (e) {
        this.itemFailed(item, e, later);
      }
    }
    if (later.length) this.retryLater(later);
    return lost;
  }

  /** One email's write failed: kept for later while the store is away, else logged (its lease brings it back). */
  private itemFailed(item: Item, e: unknown, later: Item[]): void {
    if (isStoreUnavailable(e)) later.push(item);
    else
      this.ctx.log.error(
        { err: (e as Error).message, email_seq: item.emailSeq },
        'result write failed; the lease will bring it back',
      );
  }

  private logBatchFailure(batch: readonly Item[], err: unknown): void {
    // A status changed under the batch (an operator's cancel or purge on another connection): expected, rare.
    this.ctx.log[isOutcomeRace(err) ? 'info' : 'error'](
      { err: (err as Error).message, items: batch.length },
      'batched result write failed; writing one email at a time',
    );
  }

  /** oneByOne on the pool: each email's transaction awaited in turn. */
  private async oneByOnePooled(batch: readonly Item[], err: unknown, leases?: ClaimTokens): Promise<number[]> {
    this.logBatchFailure(batch, err);
    const later: Item[] = [];
    const lost: number[] = [];
    for (const item of batch) {
      try {
        lost.push(...(await writeResultItemPooled(this.ctx, item, leases)));
      } catch (e) {
        this.itemFailed(item, e, later);
      }
    }
    if (later.length) this.retryLater(later);
    return lost;
  }
}

/** Whether some of the batch's recipients may be due again later (deferred, or settled without an outcome). */
const isDue = (batch: readonly Item[]): boolean =>
  batch.some((i) => i.outcomes.length === 0 || i.outcomes.some((o) => o.event === 'deferred'));

/** The batch's items with one per email (outcomes and ids in the order pushed); sites are counted per item. */
function perEmail(batch: readonly Item[]): Map<number, Item> {
  const m = new Map<number, Item>();
  for (const i of batch) {
    const prior = m.get(i.emailSeq);
    if (!prior) m.set(i.emailSeq, i);
    else
      m.set(i.emailSeq, {
        ...prior,
        outcomes: [...prior.outcomes, ...i.outcomes],
        ids: [...prior.ids, ...i.ids],
        siteOf: new Map([...(sitesOf(prior) ?? []), ...(sitesOf(i) ?? [])]),
        known: undefined, // its first item's writes must be seen: read
      });
  }
  return m;
}
