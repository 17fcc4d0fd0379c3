// The processes of one node. With MTA_HTTP_WORKERS (PostgreSQL only) `mta serve` is a primary process that runs
// everything (delivery loop, listeners, jobs, webhook dispatcher) and hands its HTTP connections to worker processes
// that serve the HTTP API on the same database (src/http/cluster.ts; docs/operations.md "HTTP workers"). This is
// what the services and features know of it: the role of this process, and the messages that keep one node
// behaving as one process would (a wake-up for the primary's components, caches dropped everywhere after a write
// that changes what they hold, and the limits the primary keeps for the whole node).
import type { DB } from '../store/db.js';
import { domainsGeneration } from '../store/domains.js';
import { endpointsGeneration } from '../store/webhooks.js';
import { openTurn, whenCommitted } from '../store/group-commit.js';
import type { TakeResult } from '../core/rate-limit.js';
import type { Intake } from './delivery.js';

/** What a worker's commit gives a component of the primary to do: deliver new mail, post new webhook rows. */
export type Nudge = 'delivery' | 'webhooks';

export interface Siblings {
  role: 'primary' | 'worker';
  /** Tells the primary's component (a worker's commit made work for it); after the commit. */
  nudge(kind: Nudge): void;
  /** Every other process of the node drops what it remembers (services/remembered.ts). */
  forget(): void;
  /**
   * The node's API rate limiter (kept by the primary) takes a token for `key`: at once from tokens the primary
   * lent this process, else by asking it (a promise).
   */
  take(key: string): TakeResult | Promise<TakeResult>;
  /** Asks the primary (op, JSON-able args) and answers its JSON-able reply: the shared sign-in guard, metrics. */
  call(op: string, args: unknown[]): Promise<unknown>;
  /**
   * A worker's door to the primary's delivery loop (services/delivery.ts Intake): new recipients due now are
   * leased in their insert, under the credit the primary granted, and sent to its loop after the commit.
   * `handed(seq)`: whether that email's recipients were sent so (then the loop needs no wake-up to claim them).
   */
  intake?: Intake & { handed(seq: number): boolean };
}

const handlers = new WeakMap<DB, Map<Nudge, (() => void)[]>>();

/** Registers what the primary does when a worker's commit nudges `kind` (features: the loop's wake-up, the dispatcher). */
export function onNudge(db: DB, kind: Nudge, fn: () => void): void {
  const m = handlers.get(db) ?? new Map<Nudge, (() => void)[]>();
  m.set(kind, [...(m.get(kind) ?? []), fn]);
  handlers.set(db, m);
}

/** Runs the handlers of `kind` (the primary, on a worker's message). */
export function nudged(db: DB, kind: Nudge): void {
  for (const fn of handlers.get(db)?.get(kind) ?? []) fn();
}

const revocations = new WeakMap<DB, number>();
/** A key was revoked through this process (services/keys.ts): siblings must drop it too. */
export function keyRevoked(db: DB): void {
  revocations.set(db, (revocations.get(db) ?? 0) + 1);
}

/**
 * Changes on each write through this process after which other processes' caches must be dropped (a key revoked,
 * a domain or its signing key written, a webhook endpoint written): the HTTP layer compares it around each request and calls forget().
 */
export const cacheGeneration = (db: DB): number =>
  (revocations.get(db) ?? 0) + domainsGeneration(db) + endpointsGeneration(db);

/**
 * fn once this process's writes so far are committed (or failed): after the open group-commit turn's COMMIT, or the
 * one sent without waiting (PostgreSQL); else on the next check phase. For a message that makes another process
 * read them (a nudge).
 */
export const afterWrites = (db: DB, fn: () => void): void => whenCommitted(db, fn);
/** What identifies the group-commit turn that this process's writes join now (undefined: none open). */
export const currentTurn = (db: DB): object | undefined => openTurn(db);

/** This process is an HTTP worker: it serves HTTP only; the primary runs the loop, listeners, jobs and dispatcher. */
export const isHttpWorker = (ctx: { siblings?: Siblings }): boolean => ctx.siblings?.role === 'worker';
