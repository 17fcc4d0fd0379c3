// The queued statements of the asynchronous plan driver on PostgreSQL (./plan-driver.ts): what a plan's connection
// (./plan-connection.ts) queues until its next round trip, and how their answers are read.
import pg from 'pg';
import type { Stmt } from '../db.js';
import type { RunResult } from '../op.js';
import { PgStatement } from './database.js';
import type { PlanConnection } from './plan-connection.js';

// Integers (int8) and numerics as JS numbers, as the synchronous engine reads them (timestamps are ms).
const asNumber = (v: string | null) => (v === null ? null : Number(v));
export const types = {
  getTypeParser: (oid: number, format?: string) =>
    oid === 20 || oid === 1700 ? asNumber : pg.types.getTypeParser(oid, format as 'text'),
};

export type Described = ReturnType<PgStatement['describe']>;
/** A statement queued until the next one that needs an answer; `rows` (and `count`) once it has run. */
export interface Queued {
  d: Described;
  /** the connection whose queue holds it (a read made in another transaction is sent again here) */
  conn?: PlanConnection;
  /** sent to the server (its answer may not be back yet) */
  sent?: boolean;
  /** a write whose outcome nobody reads (fire): an `ON CONFLICT DO NOTHING` INSERT may merge (./coalesce.ts) */
  blind?: boolean;
  done?: boolean;
  rows?: unknown[];
  count?: number;
}
/** What getLater/allLater answer on the pool: the queued read, and whether its first row or all rows are wanted. */
export interface Handle {
  q: Queued;
  first: boolean;
}

export function describe(s: Stmt, args: unknown[], write: boolean): Described {
  if (!(s instanceof PgStatement)) throw new TypeError('the asynchronous driver runs PostgreSQL statements only');
  return s.describe(args, write);
}

export const rowsOf = (d: Described, r: pg.QueryResult) =>
  d.array ? (r.rows as unknown[][]).map((row) => row[0]) : (r.rows as unknown[]);

/** A statement of our own (BEGIN, COMMIT, SAVEPOINT…): no parameters, not prepared. */
export const raw = (text: string): Described => ({ text, values: [], array: false });

/** The answer of a read once its round trip is back. */
export const answerOf = (h: Handle): unknown => (h.first ? h.q.rows![0] : h.q.rows);

/** What run() answers: the changed rows and the inserted id, from the write's answer. */
export const runResultOf = (q: Queued): RunResult => {
  const id = q.d.idCol ? ((q.rows?.[0] as Record<string, number> | undefined)?.[q.d.idCol] ?? 0) : 0;
  return { changes: q.count ?? 0, lastInsertRowid: id };
};

/** A run's outcome read from its answer: `done` answers it once back (or throws, read before). */
export const lazyResult = (done: () => RunResult): RunResult => ({
  get changes() {
    return done().changes;
  },
  get lastInsertRowid() {
    return done().lastInsertRowid;
  },
});

export const seconds = (from: bigint) => Number(process.hrtime.bigint() - from) / 1e9;

export const NO_PARENTS: ReadonlySet<string> = new Set();

export function settle(q: Queued, r: { rows?: unknown[]; rowCount?: number | null }): void {
  q.rows = rowsOf(q.d, r as pg.QueryResult);
  q.count = r.rowCount ?? 0;
  q.done = true;
}

/**
 * A plan sent with runPooled opened a transaction. A pooled transaction that holds a lock (a row it wrote, the team's
 * credit lock) while it waits for the event loop to send its next statement or its COMMIT can hang the node if the
 * synchronous connection waits for that lock: it blocks the event loop, and PostgreSQL sees no cycle. Statements one
 * at a time hold their locks only while the server runs them. The transactions that take those locks run through
 * runLocking, which allows them where every other holder of the same locks is on the pool too.
 */
export class SingleStatements extends Error {
  constructor() {
    super(
      'runPooled runs single statements: a transaction on the pool could hold a lock the synchronous connection waits for',
    );
  }
}
