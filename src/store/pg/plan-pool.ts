// The pool of connections the asynchronous plan driver runs plans on (./plan-driver.ts), with its metrics by kind of
// use (issue 38 session 21).
import pg from 'pg';
import { isPg, type DB } from '../db.js';
import type { Gen } from '../op.js';
import { isConnectionLoss, unreachable } from './errors.js';
import { PlanConnection } from './plan-connection.js';
import { seconds } from './plan-statements.js';

/** Longest wait for a new connection before a plan fails as the database unreachable (503, back-off by the caller). */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * What a connection of the pool is taken for (metrics, issue 38 session 21): a submit turn, the delivery loop's
 * single statements (claims, lease confirmations, next due time, wake-ups), a result batch, anything else.
 */
export const POOL_KINDS = ['turn', 'claim', 'result', 'other'] as const;
export type PoolKind = (typeof POOL_KINDS)[number];
/** Per kind: connections taken, the time waited for them and held, the statements and round trips sent on them. */
export interface PoolKindStats {
  acquires: number;
  waitSeconds: number;
  holdSeconds: number;
  /** of the time held: waiting for the server's answers (its round trips, with the event loop's delay to read them) */
  answerSeconds: number;
  /** of that: waiting for COMMITs (with a durable one's WAL flush) */
  commitSeconds: number;
  statements: number;
  roundTrips: number;
}

/** Plans run on PostgreSQL through a pool: several at once, none holding the event loop while it waits. */
export class PlanPool {
  private readonly pool: pg.Pool;
  /** Statements sent so far, round trips waited for, and plans waiting for the server now (tests, metrics). */
  statements = 0;
  roundTrips = 0;
  inFlight = 0;
  /** Per kind of use (PoolKind): see PoolKindStats. */
  readonly byKind = Object.fromEntries(
    POOL_KINDS.map((k) => [
      k,
      { acquires: 0, waitSeconds: 0, holdSeconds: 0, answerSeconds: 0, commitSeconds: 0, statements: 0, roundTrips: 0 },
    ]),
  ) as Record<PoolKind, PoolKindStats>;
  /** Connections held now, and their integral over time (connection-seconds; busy on average = its rate). */
  busy = 0;
  private busyArea = 0;
  private busySince = process.hrtime.bigint();

  /**
   * `light`: every transaction of the pool's connections commits without waiting for its WAL flush
   * (synchronous_commit = off for the session): the delivery loop's bookkeeping, lightTx's bargain (store/queue.ts).
   */
  constructor(url: string, size = 8, opts: { light?: boolean } = {}) {
    this.pool = new pg.Pool({
      // Queries sent before the answers of the earlier ones (pg's pipeline mode): one round trip for a
      // transaction's queued writes and its next read (PlanConnection.sendAll).
      pipeline: true,
      connectionString: url,
      max: size,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      ...(opts.light ? { options: '-c synchronous_commit=off' } : {}),
    });
    // An idle connection the server dropped: the pool discards it; the next plan gets a new one.
    this.pool.on('error', () => undefined);
  }

  /**
   * A connection of the pool (`db`: the store whose plans run on it, see PlanConnection). The database away is an
   * error isConnectionLoss knows (08006). `release(err)` hands it back: with the error that ended its plan, a
   * connection left inside a transaction, lost or failed is not given to the next plan.
   */
  async connection(
    opts: { single?: boolean; db?: DB; durable?: boolean; lazyRuns?: boolean; kind?: PoolKind } = {},
  ): Promise<{ conn: PlanConnection; release: (err?: unknown) => void }> {
    let client: pg.PoolClient;
    const stats = this.byKind[opts.kind ?? 'other'];
    const asked = process.hrtime.bigint();
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw unreachable((err as Error).message);
    } finally {
      stats.waitSeconds += seconds(asked);
    }
    const taken = process.hrtime.bigint();
    stats.acquires++;
    this.held(1);
    // pg-pool listens for a connection's 'error' only while it is idle: checked out, a connection the server ends
    // between two statements (57P01 at a restart) would emit an error nobody hears, which ends the process. Heard
    // here, it marks the connection broken (its next statement fails as the database away).
    let lost: Error | undefined;
    const onError = (e: Error) => {
      lost = e;
    };
    client.on('error', onError);
    const db = opts.db && isPg(opts.db) ? opts.db : undefined;
    const conn = new PlanConnection(client, opts.single, db, this, opts.durable, opts.lazyRuns);
    let released = false;
    const release = (err?: unknown) => {
      if (released) return;
      released = true;
      client.off('error', onError);
      this.statements += conn.statements;
      this.roundTrips += conn.roundTrips;
      stats.statements += conn.statements;
      stats.roundTrips += conn.roundTrips;
      stats.holdSeconds += seconds(taken);
      stats.answerSeconds += conn.answerSeconds;
      stats.commitSeconds += conn.commitSeconds;
      this.held(-1);
      const broken = err !== undefined && (conn.depth > 0 || !(err as { code?: string }).code || isConnectionLoss(err));
      // Light again for the next plan (PlanConnection.send): sent before it, on the same connection, in order.
      if (conn.durableSession && !broken && !lost) void client.query('RESET synchronous_commit').catch(() => undefined);
      client.release(broken ? (err as Error) : lost);
    };
    return { conn, release };
  }

  /** Connections held: `d` more (or fewer), the time-integral kept up to now. */
  private held(d: number): void {
    const now = process.hrtime.bigint();
    this.busyArea += (this.busy * Number(now - this.busySince)) / 1e9;
    this.busySince = now;
    this.busy += d;
  }

  /** Connection-seconds held so far (its rate over an interval: connections busy on average). */
  get busySeconds(): number {
    return this.busyArea + (this.busy * Number(process.hrtime.bigint() - this.busySince)) / 1e9;
  }

  /** The error a plan on the pool fails with: a connection lost without a SQLSTATE as the database unreachable. */
  static failure(err: unknown): unknown {
    return isConnectionLoss(err) && !(err as { code?: string }).code ? unreachable((err as Error).message) : err;
  }

  /**
   * Runs the plan on a connection of the pool. The database away (no connection, or the connection lost during the
   * plan) is an error isConnectionLoss knows (08006): the adapters answer 503 and the loops back off, as with the
   * synchronous engine; the next plan tries a new connection. `db`: the store the plan reads (PgDatabase.scope).
   */
  async run<T>(
    plan: Gen<T>,
    opts: { single?: boolean; db?: DB; durable?: boolean; lazyRuns?: boolean; kind?: PoolKind } = {},
  ): Promise<T> {
    this.inFlight++;
    try {
      const { conn, release } = await this.connection(opts);
      let failed: unknown;
      try {
        return await conn.drive(plan);
      } catch (err) {
        failed = err;
        throw PlanPool.failure(err);
      } finally {
        release(failed);
      }
    } finally {
      this.inFlight--;
    }
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
