// The delivery loop's claims (outbound/loop.ts): recipients claimed under a lease in rounds, the lease confirmed
// right before a send, given back when the loop lets go of them. Each held recipient carries the lease end this
// node last wrote for it (its token): a confirmation or a release touches the row only while it still carries it,
// so a recipient another node claimed once this node's lease ended is neither sent nor given back here.
// PostgreSQL with a pool (MTA_PG_POOL_SIZE > 0): the claims and confirmations are awaited on connections of their
// own (the event loop goes on meanwhile); otherwise they run on the synchronous connection, as SQLite does.
import type { Ctx } from '../services/context.js';
import {
  claimDue,
  claimDueAsync,
  confirmClaims,
  confirmClaimsAsync,
  lightTx as tx,
  pooled,
  releaseClaims,
  dropClaims,
  type Claimed,
  type EmailRow,
} from '../services/delivery.js';

/** Shortest time between two claims while slow domains are left in the store. */
const SKIP_RETRY_MS = 200;
/** Most claim rounds per tick. */
const ROUNDS = 50;

export interface ClaimsHost {
  /** How many more recipients the loop may take in now. */
  room(): number;
  /** Domains whose queue in memory is slow: their recipients are left in the store. */
  skip(now: number): string[];
  stopping(): boolean;
  /** Fresh claimed recipients (with their emails' rows when the claim read them). */
  accept(rows: Claimed[], emails?: Map<number, EmailRow>): void;
}

export class Claims {
  /** Recipients claimed (or taken in their insert) and not settled yet, each with its lease token. */
  readonly held = new Map<number, number | null>();
  /** Claims and confirmations awaited on the pool (PostgreSQL), else synchronous. */
  readonly async: boolean;
  /** Claim queries run, and recipients taken in by them (tests, metrics). */
  queries = 0;
  claimed = 0;
  /**
   * The last claim found every due recipient it looked for (none left in the store but those of skipped domains):
   * new mail may come straight in.
   */
  caughtUp = false;
  private skipAfter = 0;

  constructor(
    private readonly ctx: Ctx,
    private readonly o: { leaseMs: number; batch: number },
    private readonly host: ClaimsHost,
  ) {
    this.async = pooled(ctx.db);
  }

  /** Recipients now held (their lease token as written): claimed, or taken in their very insert. */
  hold(rows: readonly Claimed[]): void {
    for (const r of rows) this.held.set(r.id, r.leased_until);
  }

  /** The lease tokens held for `ids`. */
  leasesOf(ids: readonly number[]): (number | null)[] {
    return ids.map((id) => this.held.get(id) ?? null);
  }

  /**
   * The claimed rows not held yet. A held one claimed again (its lease ended while it waited in memory) keeps its
   * place, with the new lease as its token.
   */
  private freshOf(rows: readonly Claimed[]): Claimed[] {
    const fresh = rows.filter((r) => !this.held.has(r.id));
    this.hold(rows);
    return fresh;
  }

  /** One round's bookkeeping; true when the store may hold more due recipients (claim again). */
  private took(
    rows: readonly Claimed[],
    fresh: Claimed[],
    limit: number,
    skip: string[],
    now: number,
    e?: Map<number, EmailRow>,
  ) {
    this.claimed += fresh.length;
    if (fresh.length) this.host.accept(fresh, e);
    // Caught up even with domains skipped: their mail waits in the store on purpose, and Intake refuses theirs.
    this.caughtUp = rows.length < limit;
    if (rows.length >= limit) return true;
    if (skip.length) this.skipAfter = now + SKIP_RETRY_MS;
    return false;
  }

  /** Claims due recipients in rounds while there is room, on the synchronous connection. */
  claimMore(): void {
    const now = this.ctx.now();
    if (this.host.skip(now).length && now < this.skipAfter) return;
    for (let round = 0; round < ROUNDS && this.host.room() > 0; round++) {
      const limit = Math.min(this.o.batch, this.host.room());
      const skip = this.host.skip(now); // again each round: the last one may have filled a domain's share
      this.queries++;
      const rows = tx(this.ctx.db, () => claimDue(this.ctx.db, now, now + this.o.leaseMs, limit, skip));
      if (!this.took(rows, this.freshOf(rows), limit, skip, now)) return;
    }
  }

  /** claimMore on the pool, each round awaited (with its emails' rows); rows that arrive while stopping stay held. */
  async claimMorePooled(): Promise<void> {
    const now = this.ctx.now();
    if (this.host.skip(now).length && now < this.skipAfter) return;
    for (let round = 0; round < ROUNDS && this.host.room() > 0; round++) {
      if (this.host.stopping()) return;
      const limit = Math.min(this.o.batch, this.host.room());
      const skip = this.host.skip(this.ctx.now());
      this.queries++;
      // Each round's lease from its own start: awaited rounds take time, and a lease counted from the first
      // round's start would end early (another node could claim a recipient this one still holds).
      const at = this.ctx.now();
      const { rows, emails } = await claimDueAsync(this.ctx.db, at, at + this.o.leaseMs, limit, skip);
      const fresh = this.freshOf(rows);
      if (this.host.stopping()) return; // held: stop() releases them
      if (!this.took(rows, fresh, limit, skip, now, emails)) return;
    }
  }

  /**
   * Extends the leases of `ids` for a send starting now, in one statement: the ids confirmed (still sendable, not
   * held, still this node's), their lease ending at `until`. Synchronous (store errors thrown).
   */
  confirm(ids: readonly number[], until: number): Set<number> {
    const ok = tx(this.ctx.db, () => confirmClaims(this.ctx.db, ids, this.leasesOf(ids), until));
    this.confirmed(ok, until);
    return ok;
  }

  /** confirm() on the pool, awaited. */
  async confirmPooled(ids: readonly number[], until: number): Promise<Set<number>> {
    const ok = await confirmClaimsAsync(this.ctx.db, ids, this.leasesOf(ids), until);
    this.confirmed(ok, until);
    return ok;
  }

  private confirmed(ok: Set<number>, until: number): void {
    for (const id of ok) if (this.held.has(id)) this.held.set(id, until);
  }

  /** Settled (their results written): no longer held. */
  settled(ids: readonly number[]): void {
    for (const id of ids) this.held.delete(id);
  }

  /** Gives held recipients back to the store, due at `at` (those still this node's); no longer held. */
  release(ids: readonly number[], at: number): number {
    const n = releaseClaims(this.ctx.db, ids, at, this.leasesOf(ids));
    this.settled(ids);
    return n;
  }

  /**
   * Lets go of held recipients refused at their confirmation, without an outcome: their lease cleared where it is
   * still this node's (never another node's); no longer held. A store error leaves the lease to end by itself.
   */
  drop(ids: readonly number[]): void {
    try {
      dropClaims(this.ctx.db, ids, this.leasesOf(ids));
    } finally {
      this.settled(ids);
    }
  }

  /** Gives back every recipient still held (shutdown). */
  releaseAll(at: number): number {
    return this.release([...this.held.keys()], at);
  }
}
