// The delivery queue in SQLite: claim due recipients under a lease (crash → re-delivered when the
// lease ends), confirm a claim before sending, settle or release claims. Plans (op.ts); lightTx is synchronous.
import { atomically, isPg, pgArray, PLAN_EACH_TIME, setSynchronous, sql, synchronousOf, tx, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';
import { leaveTurn } from './group-commit.js';
import type { PgDatabase } from './pg/database.js';
import type { Status } from '../core/status.js';
import { emailsBySeq, readEmailsAhead, type EmailRow } from './emails.js';

export interface Claimed {
  id: number;
  email_seq: number;
  recipient: string;
  domain: string;
  status: Status;
  attempts: number;
  first_attempt_at: number | null;
  /**
   * The lease this process holds on the row (its end, as written by the claim, the insert or the last confirmation):
   * the row's leased_until is the lease's token. Another node that claims the row once the lease ended writes its own
   * (a later end), and confirmClaims then refuses the row to this one.
   */
  leased_until: number | null;
}

/**
 * A list of ids: SQLite reads a JSON array; PostgreSQL takes a bigint[] and plans the statement for its length
 * (PLAN_EACH_TIME: `IN (json_each(…))` let the planner assume 100 ids, and a plan made while the table was small
 * scanned it whole; docs/postgres-notes.md).
 */
const ID_LIST = 'SELECT value FROM json_each(@ids)';
const idList = (db: DB, ids: readonly number[]) => (isPg(db) ? pgArray(ids) : JSON.stringify(ids));
const inIds = (text: (ids: string) => string) => ({
  sqlite: text(`IN (${ID_LIST})`),
  pg: `${PLAN_EACH_TIME} ${text('= ANY(@ids::bigint[])')}`,
});
const SENDABLE = "('queued', 'sent', 'delivery_delayed')";
const FINAL = "('delivered', 'bounced', 'complained', 'failed', 'canceled')";

/**
 * Claims up to `limit` due deliveries (oldest due first), leasing them until `until`, leaving out the
 * destination domains in `skip` (their queue in memory is full).
 */
export function* claimDue(
  db: DB,
  now: number,
  until: number,
  limit: number,
  skip: readonly string[] = [],
): Gen<Claimed[]> {
  const rows = yield* claimRows(db, now, until, limit, skip);
  yield* readEmailsAhead(db, [...new Set(rows.map((r) => r.email_seq))]); // PostgreSQL: with the claim's COMMIT
  return rows;
}

/**
 * claimDue for a connection of its own (the pool, store/pg/plan-driver.ts runPooled): the claim is one statement, so
 * it needs no transaction, and the claimed emails' rows come with it (a second statement), by seq.
 */
export function* claimDueWithEmails(
  db: DB,
  now: number,
  until: number,
  limit: number,
  skip: readonly string[] = [],
): Gen<{ rows: Claimed[]; emails: Map<number, EmailRow> }> {
  const rows = yield* claimRows(db, now, until, limit, skip);
  const emails = yield* emailsBySeq(db, [...new Set(rows.map((r) => r.email_seq))]);
  return { rows, emails: new Map(emails.map((e) => [Number(e.seq), e])) };
}

function* claimRows(db: DB, now: number, until: number, limit: number, skip: readonly string[]): Gen<Claimed[]> {
  // The due index picks the rows. A held recipient (operator hold, migration 012) has next_attempt_at NULL,
  // so the index never offers it; `held_at IS NULL` states it all the same.
  // PostgreSQL, several nodes: rows another node is claiming right now are skipped, not waited for.
  const filter = skip.length ? 'AND domain NOT IN (SELECT value FROM json_each(@skip))' : '';
  const pick = `SELECT id FROM deliveries WHERE next_attempt_at <= @now AND held_at IS NULL ${filter} ORDER BY next_attempt_at LIMIT @limit`;
  const claim = (select: string) => `UPDATE deliveries SET next_attempt_at = @until, leased_until = @until
    WHERE id IN (${select}) RETURNING id, email_seq, recipient, domain, status, attempts, first_attempt_at, leased_until`;
  // PostgreSQL plans it for `now` each time: a generic plan guesses how many rows are due (docs/postgres-notes.md).
  const pg = `${PLAN_EACH_TIME} ${claim(`${pick} FOR UPDATE SKIP LOCKED`)}`;
  return yield* all(sql<Claimed>(db, claim(pick), pg), {
    now,
    until,
    limit,
    ...(skip.length ? { skip: JSON.stringify(skip) } : {}),
  });
}

/**
 * The rows of `ids` still leased to this process: `leases[i]`, the lease end it last wrote for `ids[i]`
 * (Claimed.leased_until), is the lease's token. A row whose leased_until differs was claimed by another node once
 * this lease ended (or was settled or released meanwhile): not this process's. `set`: the UPDATE's SET clause.
 */
function owned(db: DB, set: string, ids: readonly number[], leases: readonly (number | null)[]) {
  // A lease unknown (null) matches no row.
  const own = ids.map((id, i) => [id, leases[i] ?? -1] as const);
  // SQLite: the pairs as a JSON array of [id, lease], joined once (UPDATE … FROM: each pair finds its row by primary
  // key); their columns are named apart from the table's so that `set` and the callers' suffixes stay unambiguous.
  const pairs = `SELECT json_extract(value, '$[0]') AS c_id, json_extract(value, '$[1]') AS c_lease FROM json_each(@pairs)`;
  const sqlite = `UPDATE deliveries SET ${set} FROM (${pairs}) AS c
    WHERE deliveries.id = c.c_id AND deliveries.leased_until = c.c_lease`;
  const pg = `${PLAN_EACH_TIME} UPDATE deliveries SET ${set} FROM unnest(@ids::bigint[], @leases::bigint[]) AS c(id, lease)
    WHERE deliveries.id = c.id AND deliveries.leased_until = c.lease`;
  const args = isPg(db)
    ? { ids: pgArray(own.map((p) => p[0])), leases: pgArray(own.map((p) => p[1])) }
    : { pairs: JSON.stringify(own) };
  return { sqlite, pg, args };
}

/**
 * Right before a transaction starts: extends the lease of the deliveries still sendable (and not held) and still
 * leased to this process (`leases`, see owned()), and returns their ids. One statement, so a concurrent cancel,
 * hold or another node's claim either sees the lease or wins before it.
 */
export function* confirmClaims(
  db: DB,
  ids: readonly number[],
  leases: readonly (number | null)[],
  until: number,
): Gen<Set<number>> {
  const q = owned(db, 'next_attempt_at = @until, leased_until = @until', ids, leases);
  const where = ` AND status IN ${SENDABLE} AND held_at IS NULL RETURNING `;
  const s = sql<{ id: number }>(db, `${q.sqlite}${where}id`, `${q.pg}${where}deliveries.id`);
  const rows = yield* all(s, { ...q.args, until });
  return new Set(rows.map((r) => Number(r.id)));
}

const SETTLE = `leased_until = NULL, next_attempt_at = CASE WHEN status IN ${FINAL} THEN NULL ELSE next_attempt_at END`;

/** After applyOutcomes: drops the lease; a final delivery never stays due. */
export function* settleClaim(db: DB, id: number): Gen<void> {
  yield* run(sql(db, `UPDATE deliveries SET ${SETTLE} WHERE id = ?`), id);
}

/**
 * settleClaim for the delivery loop's claims `ids` (in one statement), only on the rows still leased to this process
 * (`leases`, owned()): a row another node claimed once this lease ended keeps that node's lease. Nobody reads its
 * outcome (a result transaction's write, sent with the next statement).
 */
export function* settleClaims(db: DB, ids: readonly number[], leases: readonly (number | null)[]): Gen<void> {
  if (ids.length === 0) return;
  const q = owned(db, SETTLE, ids, leases);
  yield* run(sql(db, q.sqlite, q.pg), q.args);
}

/**
 * Lets go of claims this process holds without an outcome (refused at their confirmation: final, held, or another
 * node's since): settleClaim's write, only on the rows still leased to this process (owned()), so another node's
 * lease on a recipient it is sending is never cleared.
 */
export function* dropClaims(db: DB, ids: readonly number[], leases: readonly (number | null)[]): Gen<number> {
  if (ids.length === 0) return 0;
  const q = owned(db, SETTLE, ids, leases);
  return (yield* run(sql(db, q.sqlite, q.pg), q.args)).changes;
}

const RELEASE = `next_attempt_at = CASE WHEN status IN ${FINAL} OR held_at IS NOT NULL THEN NULL ELSE @at END, leased_until = NULL`;

/**
 * Gives unfinished claims back: due at `at` (now, at shutdown), no lease; a held one stays not due. With `leases`
 * (the delivery loop's), only the rows still leased to this process (owned()): one another node claimed since its
 * lease ended is being sent there, and made due again here it could be claimed and sent a second time.
 */
export function* releaseClaims(
  db: DB,
  ids: readonly number[],
  at: number,
  leases?: readonly (number | null)[],
): Gen<number> {
  if (ids.length === 0) return 0;
  if (leases) {
    const q = owned(db, RELEASE, ids, leases);
    const pg = q.pg.replace('ELSE @at END', 'ELSE @at::bigint END');
    return (yield* run(sql(db, q.sqlite, pg), { ...q.args, at })).changes;
  }
  const q = inIds((ids) => `UPDATE deliveries SET ${RELEASE} WHERE id ${ids} AND leased_until IS NOT NULL`);
  const pg = q.pg.replace('ELSE @at END', 'ELSE @at::bigint END');
  return (yield* run(sql(db, q.sqlite, pg), { ids: idList(db, ids), at })).changes;
}

/** Makes the waiting (unleased, not final) deliveries to `domains` due at `now` (an operator resumed their site). */
export function* wakeDomains(db: DB, domains: readonly string[], now: number): Gen<number> {
  if (domains.length === 0) return 0;
  const text = `UPDATE deliveries SET next_attempt_at = @now WHERE domain IN (SELECT value FROM json_each(@domains))
    AND next_attempt_at > @now AND leased_until IS NULL AND status IN ${SENDABLE}`;
  return (yield* run(sql(db, text), { domains: JSON.stringify(domains), now })).changes;
}

/** When the next delivery of a domain not in `skip` comes due (ms), or null when there is none. */
export function* nextDue(db: DB, skip: readonly string[] = []): Gen<number | null> {
  if (skip.length === 0) {
    const text = 'SELECT min(next_attempt_at) AS t FROM deliveries WHERE next_attempt_at IS NOT NULL';
    return (yield* get(sql<{ t: number | null }>(db, text)))?.t ?? null;
  }
  const text = `SELECT next_attempt_at AS t FROM deliveries WHERE next_attempt_at IS NOT NULL
    AND domain NOT IN (SELECT value FROM json_each(@skip)) ORDER BY next_attempt_at LIMIT 1`;
  return (yield* get(sql<{ t: number }>(db, text), { skip: JSON.stringify(skip) }))?.t ?? null;
}

const FULL = 2;
/**
 * A transaction of the delivery loop's own bookkeeping (leases, attempt results) committed without waiting
 * for fsync (synchronous=NORMAL for this commit only: WAL order still holds, and the next FULL commit — an
 * API 202 — syncs it too). A process crash loses nothing; a power cut may lose the last results, and their
 * recipients are then sent again when the lease ends. Inside an open transaction it simply joins it.
 */
export function lightTx<T>(db: DB, fn: () => T): T {
  leaveTurn(db); // PostgreSQL: never inside a group-commit turn that a deadlock could replay without it
  if (db.inTransaction) return atomically(db, fn);
  // PostgreSQL: the same bargain per transaction (its WAL order holds too; the next durable commit flushes it).
  if (isPg(db)) return tx(db, unsynced(db, fn));
  // Pragmas run when they are compiled: db.pragma() prepares each time (a cached statement would do nothing); the
  // level is known without asking (db.ts setSynchronous) unless the connection was set up elsewhere.
  const full =
    (synchronousOf(db) ?? (db.pragma('synchronous', { simple: true }) === FULL ? 'FULL' : 'NORMAL')) === 'FULL';
  if (full) setSynchronous(db, 'NORMAL');
  try {
    return atomically(db, fn, true);
  } finally {
    if (full) setSynchronous(db, 'FULL');
  }
}

/**
 * lightTx whose COMMIT, on PostgreSQL, is sent without waiting (with the writes still queued): this thread goes on
 * while the server runs them, and `done` runs once the answer is read, with the error that undid the whole
 * transaction if any. fn's reads wait as usual, and a throw from fn is thrown here (done is not called). SQLite, or
 * inside an open transaction: lightTx, then done(null) before this returns.
 */
export function lightTxLater<T>(db: DB, fn: () => T, done: (err: Error | null) => void): T {
  leaveTurn(db);
  if (!isPg(db) || db.inTransaction) {
    const r = lightTx(db, fn);
    done(null);
    return r;
  }
  return db.transactionLater(unsynced(db, fn), done);
}

/** PostgreSQL: fn in a transaction committed without waiting for its WAL flush (lightTx's bargain). */
const unsynced =
  <T>(db: PgDatabase, fn: () => T) =>
  (): T => {
    db.client.defer('SET LOCAL synchronous_commit = off', []);
    return fn();
  };
