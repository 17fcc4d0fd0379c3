// Emails, their tags and one delivery row per recipient. Lists are keyset-paginated on seq.
import { isPg, pgArray, PLAN_EACH_TIME, sql, type DB } from './db.js';
import { all, allLater, fire, get, getLater, read, run, type Gen, type Later } from './op.js';
import type { Status } from '../core/status.js';

export interface EmailRow {
  seq: number;
  id: string;
  team_id: string;
  test_mode: number;
  status: Status;
  from_addr: string;
  to_json: string;
  cc_json: string | null;
  bcc_json: string | null;
  reply_to: string | null;
  subject: string;
  html: string | null;
  text: string | null;
  tags_json: string | null;
  headers_json: string | null;
  tracking_opens: number;
  tracking_clicks: number;
  scheduled_at: number | null;
  credits_charged: number;
  sender_domain: string;
  created_at: number;
  updated_at: number;
  /** Attachment list as the Email shows it ({filename, content_type, size}[]), null when none; bytes are in email-content. */
  attachments_json: string | null;
  /** 1: the message is the client's own (SMTP submission), stored in email_messages. */
  raw_message: number;
  /** When the retention deleted its content (html, text, message, attachment bytes; migration 022); null while kept. */
  content_expired_at?: number | null;
}
export interface DeliveryRow {
  id: number;
  email_seq: number;
  recipient: string;
  kind: 'to' | 'cc' | 'bcc';
  domain: string;
  status: Status;
  attempts: number;
  next_attempt_at: number | null;
  first_attempt_at: number | null;
  last_reply: string | null;
  reason: string | null;
  updated_at: number;
}
export type NewEmail = Omit<EmailRow, 'seq'>;
export type NewDelivery = Pick<DeliveryRow, 'recipient' | 'kind' | 'domain' | 'status' | 'next_attempt_at'> & {
  /** Leased at once to this process's delivery loop (a claim made with the insert): the lease's end. */
  leased_until?: number | null;
};

const EMAIL_COLS =
  'id, team_id, test_mode, status, from_addr, to_json, cc_json, bcc_json, reply_to, subject, html, text, tags_json, headers_json, tracking_opens, tracking_clicks, scheduled_at, credits_charged, sender_domain, created_at, updated_at, attachments_json, raw_message';

const EMAIL_VALUES = EMAIL_COLS.split(', ')
  .map((c) => '@' + c)
  .join(', ');

/**
 * PostgreSQL: email seqs taken from the sequence SEQ_BLOCK at a time (one round trip per block instead of an
 * INSERT … RETURNING per email, so an accept's writes all travel with its turn's COMMIT), the next block read
 * ahead with a COMMIT once SEQ_LOW are left, so a turn does not wait in its middle for one (sequences ignore
 * rollbacks: a block read in a transaction rolled back is still ours). Seqs older than
 * SEQ_MAX_AGE_MS are dropped (unused seqs are gaps, as after any rollback), so with several nodes an email's seq is
 * at most that much older than its neighbours' (docs/postgres-notes.md); one node takes its seqs in order.
 */
const SEQ_BLOCK = 128;
/** Once this few are left (or half of SEQ_MAX_AGE_MS has passed), the next block is asked for ahead. */
const SEQ_LOW = 32;
const SEQ_MAX_AGE_MS = 1000;
interface SeqPool {
  seqs: number[];
  at: number;
  /** The next block, read ahead: its rows once answered (the read is sent then if it was not yet). */
  next?: { rows: Later<number[]>; at: number };
}
/** Per connection family: the synchronous connection (db), or the pool whose plan runs now (db.scope.family). */
const seqPools = new WeakMap<object, SeqPool>();
const seqBlock = (db: DB) =>
  allLater(
    // the sequence looked up once (MATERIALIZED), not per row: 131 buffers and ~0.2 ms for 128 ids, not 569 and ~1.9
    sql<number>(
      db,
      `WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence('emails', 'seq')::regclass AS r)
       SELECT nextval(s.r) FROM s, generate_series(1, ?)`,
    ).pluck(),
    SEQ_BLOCK,
  );
function* pooledSeq(db: DB): Gen<number | undefined> {
  if (!isPg(db) || !db.inTransaction) return undefined;
  const now = performance.now();
  const family = db.scope?.family ?? db;
  let pool = seqPools.get(family);
  if (!pool || pool.seqs.length === 0 || now - pool.at > SEQ_MAX_AGE_MS) {
    // The block read ahead if it came back (a rolled-back transaction never sent it) and is fresh; else one now.
    const next = pool?.next && now - pool.next.at <= SEQ_MAX_AGE_MS ? pool.next : undefined;
    const ahead = next ? (yield* read(next.rows)).map(Number) : [];
    pool = ahead.length
      ? { seqs: ahead, at: next!.at }
      : { seqs: (yield* read(yield* seqBlock(db))).map(Number), at: now };
    seqPools.set(family, pool);
  }
  // Running low, or half its age gone: the next block comes back with this transaction's next round trip. A block read
  // ahead that has itself grown half as old is read again (at a slow pace of accepts it would be too old when its
  // turn came, and that accept would wait for a fresh block; its seqs become gaps, as after any rollback).
  const stale = pool.next !== undefined && now - pool.next.at > SEQ_MAX_AGE_MS / 2;
  if ((!pool.next || stale) && (pool.seqs.length <= SEQ_LOW || now - pool.at > SEQ_MAX_AGE_MS / 2))
    pool.next = { rows: yield* seqBlock(db), at: now };
  return pool.seqs.shift();
}

/** Inserts the email, its tags and its deliveries; returns the new seq. Call inside a transaction. */
/** `ids`: receives the deliveries' ids in order (SQLite only). */
export function* insertEmail(
  db: DB,
  e: NewEmail,
  tags: readonly string[],
  deliveries: readonly NewDelivery[],
  ids?: (() => number)[],
): Gen<number> {
  const pooled = yield* pooledSeq(db);
  let seq: number;
  if (pooled !== undefined) {
    yield* run(sql(db, `INSERT INTO emails (seq, ${EMAIL_COLS}) VALUES (@seq, ${EMAIL_VALUES})`), {
      ...e,
      seq: pooled,
    });
    seq = pooled;
  } else
    seq = Number(
      (yield* run(sql(db, `INSERT INTO emails (${EMAIL_COLS}) VALUES (${EMAIL_VALUES})`), e)).lastInsertRowid,
    );
  const tag = sql(
    db,
    'INSERT OR IGNORE INTO email_tags (team_id, tag, test_mode, status, email_seq) VALUES (?, ?, ?, ?, ?)',
  );
  for (const t of tags) yield* fire(tag, e.team_id, t, e.test_mode, e.status, seq);
  const d = sql(
    db,
    'INSERT INTO deliveries (email_seq, recipient, kind, domain, status, next_attempt_at, leased_until, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  for (const r of deliveries) {
    const out = yield* run(
      d,
      seq,
      r.recipient,
      r.kind,
      r.domain,
      r.status,
      r.next_attempt_at,
      r.leased_until ?? null,
      e.created_at,
    );
    // Read when called: on PostgreSQL the id comes with the INSERT's answer (its next round trip or the COMMIT).
    ids?.push(() => Number(out.lastInsertRowid));
  }
  return seq;
}

export const emailById = (db: DB, teamId: string, id: string) =>
  get(sql<EmailRow>(db, 'SELECT * FROM emails WHERE id = ? AND team_id = ?'), id, teamId);
export function* emailBySeq(db: DB, seq: number): Gen<EmailRow | undefined> {
  return (yield* aheadRow(db, seq)) ?? (yield* get(sql<EmailRow>(db, 'SELECT * FROM emails WHERE seq = ?'), seq));
}

/** The rows of the emails `seqs` (those that exist), in no order. */
export function* emailsBySeq(db: DB, seqs: readonly number[]): Gen<EmailRow[]> {
  if (seqs.length === 0) return [];
  const text = 'SELECT * FROM emails WHERE seq IN (SELECT value FROM json_each(?))';
  const pg = `${PLAN_EACH_TIME} SELECT * FROM emails WHERE seq = ANY(?::bigint[])`;
  return yield* all(sql<EmailRow>(db, text, pg), isPg(db) ? pgArray(seqs) : JSON.stringify(seqs));
}

/**
 * PostgreSQL: the rows of the emails a claim took (store/queue.ts claimDue), read in the claim's transaction with
 * its next round trip (its COMMIT, or the group-commit turn's next one). emailBySeq answers from them until this
 * process writes anything or its current synchronous run ends (the delivery loop reads each claimed email right
 * after the claim); after a write (the status writer, whose webhook payloads read the email) it reads again.
 */
const ahead = new WeakMap<DB, { writes: number; rows: Later<EmailRow[]>; bySeq?: Map<number, EmailRow> }>();
export function* readEmailsAhead(db: DB, seqs: readonly number[]): Gen<void> {
  if (!isPg(db) || !db.inTransaction || seqs.length === 0) return;
  // Planned for the array it is given (PLAN_EACH_TIME): with `IN (json_each(…))` the planner assumed 100 values
  // and scanned the whole table while it had fewer than ~10,000 rows (docs/postgres-notes.md).
  const rows = yield* allLater(
    sql<EmailRow>(db, `${PLAN_EACH_TIME} SELECT * FROM emails WHERE seq = ANY(?::bigint[])`),
    pgArray(seqs),
  );
  const entry = { writes: db.writes, rows };
  ahead.set(db, entry);
  queueMicrotask(() => {
    if (ahead.get(db) === entry) ahead.delete(db);
  });
}
function* aheadRow(db: DB, seq: number): Gen<EmailRow | undefined> {
  const a = ahead.get(db);
  if (!a) return undefined;
  if (!isPg(db) || a.writes !== db.writes) {
    ahead.delete(db);
    return undefined;
  }
  a.bySeq ??= new Map((yield* read(a.rows)).map((r) => [Number(r.seq), r]));
  return a.bySeq.get(seq);
}
/** An email without its bodies (html, text, a submitted raw message): what status changes and events need. */
export type EmailHead = Omit<EmailRow, 'html' | 'text' | 'raw_message'>;
const HEAD_COLS = `seq, ${EMAIL_COLS.split(', ')
  .filter((c) => c !== 'html' && c !== 'text' && c !== 'raw_message')
  .join(', ')}, content_expired_at`;
const headBySeq = (db: DB) => sql<EmailHead>(db, `SELECT ${HEAD_COLS} FROM emails WHERE seq = ?`);
/** The email's row without its bodies (which can be megabytes): result writes, events, webhooks. */
export const emailHeadBySeq = (db: DB, seq: number) => get(headBySeq(db), seq);
/** emailHeadBySeq, read with the next statement that needs an answer (op.ts getLater): `yield* read(it)`. */
export const emailHeadBySeqLater = (db: DB, seq: number) => getLater(headBySeq(db), seq);
/**
 * PostgreSQL, inside a transaction: the heads of `seqs` and all their deliveries, read with the next statement that
 * needs an answer (one round trip for a whole batch of result writes, services/transition.ts). Call the function
 * for the rows; undefined on SQLite (no round trips to save: read them one email at a time).
 */
export function* outcomeReadsLater(
  db: DB,
  seqs: readonly number[],
): Gen<{ heads: Later<EmailHead[]>; deliveries: Later<DeliveryRow[]> } | undefined> {
  if (!isPg(db) || !db.inTransaction || seqs.length === 0) return undefined;
  const arg = pgArray(seqs);
  const heads = yield* allLater(
    sql<EmailHead>(db, `${PLAN_EACH_TIME} SELECT ${HEAD_COLS} FROM emails WHERE seq = ANY(?::bigint[])`),
    arg,
  );
  // One index lookup per email: until ANALYZE has seen deliveries, the planner takes each email_seq for ~0.5% of
  // the table and scanned it whole for `email_seq = ANY(…)` (4.7 ms instead of 0.3 for 47 emails of 15,000 rows).
  // OFFSET 0 keeps the subquery a subquery, so the lookup per key stays a nested loop.
  const deliveries = yield* allLater(
    sql<DeliveryRow>(
      db,
      `${PLAN_EACH_TIME} SELECT d.* FROM unnest(?::bigint[]) AS k(seq)
      CROSS JOIN LATERAL (SELECT * FROM deliveries WHERE email_seq = k.seq OFFSET 0) d ORDER BY d.id`,
    ),
    arg,
  );
  return { heads, deliveries };
}
export const emailByPublicId = (db: DB, id: string) => get(sql<EmailRow>(db, 'SELECT * FROM emails WHERE id = ?'), id);
export const setEmailStatus = (db: DB, seq: number, status: Status, at: number) =>
  run(sql(db, 'UPDATE emails SET status = ?, updated_at = ? WHERE seq = ?'), status, at, seq);
/** setEmailStatus only while the email is still in `from` (the status its new one was derived from): whether it was. */
export function* setEmailStatusFrom(db: DB, seq: number, status: Status, from: Status, at: number): Gen<boolean> {
  const s = sql(db, 'UPDATE emails SET status = ?, updated_at = ? WHERE seq = ? AND status = ?');
  return (yield* run(s, status, at, seq, from)).changes === 1;
}
// Nobody reads its outcome: sent with the next statement that needs an answer (no round trip of its own on the pool).
export const setCreditsCharged = (db: DB, seq: number, n: number) =>
  fire(sql(db, 'UPDATE emails SET credits_charged = ? WHERE seq = ?'), n, seq);

export const deliveriesOf = (db: DB, emailSeq: number) =>
  all(sql<DeliveryRow>(db, 'SELECT * FROM deliveries WHERE email_seq = ? ORDER BY id'), emailSeq);
/** A delivery of the email is claimed by the outbound loop (lease ahead, migration 003): too late to cancel. */
export function* emailInFlight(db: DB, emailSeq: number, now: number): Gen<boolean> {
  const s = sql(db, 'SELECT 1 FROM deliveries WHERE email_seq = ? AND leased_until > ? LIMIT 1');
  return (yield* get(s, emailSeq, now)) !== undefined;
}

/** Recipients with work left (queued, deferred or in flight). */
export function* countPendingDeliveries(db: DB): Gen<number> {
  return (
    (yield* get(sql<number>(db, 'SELECT count(*) FROM deliveries WHERE next_attempt_at IS NOT NULL').pluck())) ?? 0
  );
}
/** Recipients due for an attempt at `now`. */
export function* countDueDeliveries(db: DB, now: number): Gen<number> {
  const s = sql<number>(
    db,
    'SELECT count(*) FROM deliveries WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?',
  ).pluck();
  return (yield* get(s, now)) ?? 0;
}
/** The earliest `next_attempt_at` already reached at `now` (null when nothing is due): how late the queue runs. */
export function* oldestDueAt(db: DB, now: number): Gen<number | null> {
  const s = sql<number | null>(
    db,
    'SELECT min(next_attempt_at) FROM deliveries WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?',
  ).pluck();
  return (yield* get(s, now)) ?? null;
}

export interface EmailFilter {
  status?: Status;
  testMode?: boolean;
  tag?: string;
  q?: string;
}

/**
 * One mode's page (`mode` 0 or 1), or both modes' (undefined). Each combination of filters is a range of one index in
 * seq order (migrations 024, 032): mode + status emails_team_mode_status, mode alone emails_team_mode, status alone
 * emails_team_status; a tag and a mode email_tags' key, with a status email_tags_status. Both modes without a status,
 * and a tag in both modes, are one page per mode, merged (at most 2 × (limit + 1) rows sorted), rather than one more
 * index written at every accept.
 */
function listText(f: EmailFilter, mode: 0 | 1 | undefined, before: boolean, seqOnly = false): string {
  const tagged = f.tag !== undefined;
  const t = tagged ? 't' : 'e'; // the table whose index is read
  // A window of seqs (a search's) reads the tag's index alone; whole rows join their emails.
  const join = tagged && !seqOnly;
  const where = tagged
    ? [`t.team_id = @teamId AND t.tag = @tag${join ? ' AND e.team_id = @teamId' : ''}`]
    : ['e.team_id = @teamId'];
  const from = join ? 'email_tags t JOIN emails e ON e.seq = t.email_seq' : tagged ? 'email_tags t' : 'emails e';
  if (mode !== undefined) where.push(`${t}.test_mode = ${mode}`);
  if (f.status !== undefined) where.push(`${t}.status = @status`);
  const seq = tagged ? 't.email_seq' : 'e.seq';
  if (before) where.push(`${seq} < @before`);
  const cols = seqOnly ? `${seq} AS seq` : 'e.*';
  return `SELECT ${cols} FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${seq} DESC LIMIT @limit`;
}

/** A search (`q`) matches the subject or a recipient, as a substring. */
const MATCHES_Q =
  "(e.subject LIKE @q ESCAPE '\\' OR e.to_json LIKE @q ESCAPE '\\' OR e.cc_json LIKE @q ESCAPE '\\' OR e.bcc_json LIKE @q ESCAPE '\\')";

/** How many emails (newest first, after the other filters) one page of a search looks at: its cost, at any size. */
export const SEARCH_WINDOW = 5000;

/** The range of the other filters (one mode, or both merged), newest first, as `seq`s or whole rows. */
function rangeText(f: EmailFilter, before: boolean, seqOnly: boolean): string {
  const perMode = f.testMode === undefined && (f.status === undefined || f.tag !== undefined);
  return perMode
    ? `SELECT * FROM (${listText(f, 0, before, seqOnly)}) AS live UNION ALL SELECT * FROM (${listText(f, 1, before, seqOnly)}) AS test
    ORDER BY seq DESC LIMIT @limit`
    : listText(f, f.testMode === undefined ? undefined : f.testMode ? 1 : 0, before, seqOnly);
}

/**
 * The list's statement and parameters (listEmails; the plan test explains them). A search reads the newest
 * SEARCH_WINDOW emails of the other filters' range (`@window`) and keeps those that match, so a page costs the same
 * whatever the team holds; `window` is the statement that tells where that window ended.
 */
export function listEmailsQuery(
  teamId: string,
  f: EmailFilter,
  beforeSeq: number | null,
  limit: number,
): { text: string; params: Record<string, unknown>; window?: string } {
  const before = beforeSeq !== null;
  const params = {
    teamId,
    status: f.status,
    tag: f.tag,
    q: f.q === undefined ? undefined : `%${f.q.replace(/[\\%_]/g, (c) => '\\' + c)}%`,
    before: beforeSeq ?? undefined,
    limit: limit + 1,
    window: f.q === undefined ? undefined : SEARCH_WINDOW,
  };
  const defined = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
  if (f.q === undefined) return { text: rangeText(f, before, false), params: defined };
  const range = rangeText(f, before, true).replace(/@limit/g, '@window');
  return {
    text: `SELECT e.* FROM (${range}) AS w JOIN emails e ON e.seq = w.seq WHERE ${MATCHES_Q} ORDER BY e.seq DESC LIMIT @limit`,
    params: defined,
    window: `SELECT count(*) AS n, min(seq) AS last FROM (${range}) AS w`,
  };
}

/**
 * Newest first, `limit + 1` rows so the caller can tell whether another page exists. A search (`q`) also answers
 * `searchedTo`: the oldest seq its window read when the window was full (older emails are still to search: the next
 * page starts there), else null.
 */
export function* listEmails(
  db: DB,
  teamId: string,
  f: EmailFilter,
  beforeSeq: number | null,
  limit: number,
): Gen<{ rows: EmailRow[]; searchedTo: number | null }> {
  const { text, params, window } = listEmailsQuery(teamId, f, beforeSeq, limit);
  const rows = yield* all(sql<EmailRow>(db, text), params);
  if (!window || rows.length > limit) return { rows, searchedTo: null };
  const w = yield* get(sql<{ n: number; last: number | null }>(db, window), params);
  return { rows, searchedTo: w && Number(w.n) >= SEARCH_WINDOW ? Number(w.last) : null };
}

export interface DeliveryWrite {
  status: Status;
  attempts: number;
  next_attempt_at: number | null;
  last_reply: string | null;
  reason: string | null;
}
const FROM_ROW =
  'next_attempt_at = CASE WHEN held_at IS NULL THEN CAST(? AS BIGINT) END, last_reply = coalesce(?, last_reply), reason = coalesce(?, reason),';
/**
 * writeDeliveryFrom, its answer read later: the function says whether the row was still in `from` (PostgreSQL,
 * inside a transaction: the UPDATE travels with the next statement that needs an answer; calling the function
 * sends it if nothing did).
 */
export function* writeDeliveryFromLater(
  db: DB,
  id: number,
  from: Status,
  w: DeliveryWrite,
  now: number,
  settle = false,
  lease?: number | null,
): Gen<() => boolean> {
  // What the write brings nothing for (reply, reason) and the hold are taken from the row itself, as result-writes.ts
  // DELIVERIES does: a write made from what the delivery loop knows without reading the row (services/transition.ts
  // knownReads) lands as one made from a fresh read (SQLite's result batches; a hold is never given a retry time).
  // `lease`: written only while the row still carries the claim it was made under.
  const own = lease === undefined ? '' : ' AND leased_until = ?';
  const s = sql(
    db,
    `UPDATE deliveries SET status = ?, attempts = ?, ${FROM_ROW}
    first_attempt_at = coalesce(first_attempt_at, ?), updated_at = ?${settle ? ', leased_until = NULL' : ''} WHERE id = ? AND status = ?${own}`,
  );
  const args = [w.status, w.attempts, w.next_attempt_at, w.last_reply, w.reason, now, now, id, from];
  const r = yield* run(s, ...args, ...(lease === undefined ? [] : [lease ?? -1]));
  return () => r.changes === 1;
}
/**
 * Writes one recipient's new state (first_attempt_at is set once), only if its status is still `from` (what the
 * writer read): false when another connection changed it in between (PostgreSQL, READ COMMITTED: an operator's
 * purge from the CLI or another node, committed between the delivery loop's read and its write, was overwritten).
 * `settle`: the delivery loop's result, which also drops the claim's lease in the same statement (what settleClaim
 * does after it; next_attempt_at is already the retry time, or NULL when final). `lease`: the claim's token
 * (store/queue.ts owned()): written only while the row still carries it (null matches no row).
 */
export function* writeDeliveryFrom(...a: Parameters<typeof writeDeliveryFromLater>) {
  return (yield* writeDeliveryFromLater(...a))();
}

export const deliveryById = (db: DB, id: number) =>
  get(sql<DeliveryRow>(db, 'SELECT * FROM deliveries WHERE id = ?'), id);
