// Queue-control SQL over the waiting recipients (status not final, partial indexes of migration 012): one
// WHERE from the filters, list, summary groups, candidate batches of an action, and hold/release/retry writes.
import { sql, type DB } from './db.js';
import { all, fire, type Gen } from './op.js';
import type { DeliveryRow } from './emails.js';
import type { Holder, QueueState } from '../core/status.js';

/** Must read exactly like the partial indexes' WHERE (SQLite matches the term's text). */
export const WAITING = "d.status IN ('queued', 'sent', 'delivery_delayed')";
/** core/status queueState, in SQL. */
export const STATE = `CASE WHEN d.held_at IS NOT NULL THEN 'held' WHEN d.leased_until > @now THEN 'in_flight'
  WHEN d.next_attempt_at IS NULL OR d.next_attempt_at <= @now THEN 'due' WHEN d.attempts > 0 THEN 'deferred' ELSE 'scheduled' END`;

/** The named parameters a statement uses, as its arguments (PostgreSQL refuses unused ones; none: no object). */
export function argsFor(text: string, params: Record<string, unknown>): [Record<string, unknown>] | [] {
  const used = Object.entries(params).filter(([k]) => new RegExp(`@${k}\\b`).test(text));
  return used.length ? [Object.fromEntries(used)] : [];
}

export interface QueueFilter {
  teamId?: string;
  /** Recipient domains (a site stands for the domains routed to it). */
  domains?: string[];
  senderDomain?: string;
  tag?: string;
  emailId?: string;
  states?: QueueState[];
  /** Emails created before this time (ms). */
  createdBefore?: number;
  /** Test-mode emails only (a test key's view); not answered by the counters, which have no mode. */
  testMode?: true;
}

export type QueueRow = DeliveryRow & { held_at: number | null; held_by: Holder | null; leased_until: number | null };

export function where(f: QueueFilter, now: number): { text: string; params: Record<string, unknown> } {
  const parts = [WAITING];
  const params: Record<string, unknown> = { now };
  const add = (cond: string, name: string, value: unknown) => {
    parts.push(cond);
    params[name] = value;
  };
  if (f.teamId !== undefined) add('e.team_id = @team', 'team', f.teamId);
  // One domain: equality, so the domain index also gives the (email_seq, id) order without a sort.
  if (f.domains?.length === 1) add('d.domain = @domain', 'domain', f.domains[0]);
  else if (f.domains !== undefined)
    add('d.domain IN (SELECT value FROM json_each(@domains))', 'domains', JSON.stringify(f.domains));
  if (f.senderDomain !== undefined) add('e.sender_domain = @sender', 'sender', f.senderDomain);
  if (f.tag !== undefined)
    add(
      'EXISTS (SELECT 1 FROM email_tags t WHERE t.team_id = e.team_id AND t.tag = @tag AND t.test_mode = e.test_mode AND t.email_seq = d.email_seq)',
      'tag',
      f.tag,
    );
  if (f.emailId !== undefined) add('e.id = @email', 'email', f.emailId);
  if (f.states !== undefined)
    add(`(${STATE}) IN (SELECT value FROM json_each(@states))`, 'states', JSON.stringify(f.states));
  if (f.createdBefore !== undefined) add('e.created_at < @before', 'before', f.createdBefore);
  if (f.testMode) parts.push('e.test_mode = 1');
  return { text: parts.join(' AND '), params };
}

/**
 * Waiting recipients first (CROSS JOIN keeps that order: the planner would otherwise walk all of a sender's
 * or a tag's emails), except when a team or an email narrows the emails better.
 */
export const from = (f: QueueFilter) =>
  f.teamId !== undefined || f.emailId !== undefined
    ? 'deliveries d JOIN emails e ON e.seq = d.email_seq'
    : 'deliveries d CROSS JOIN emails e ON e.seq = d.email_seq';

export interface ListedRow {
  id: number;
  email_id: string;
  recipient: string;
  domain: string;
  team_id: string;
  state: QueueState;
  attempts: number;
  next_attempt_at: number | null;
  last_reply: string | null;
  held_by: Holder | null;
}

/** Oldest first (by email, then recipient). */
export function listWaiting(db: DB, f: QueueFilter, now: number, limit: number): Gen<ListedRow[]> {
  const w = where(f, now);
  return all(
    sql<ListedRow>(
      db,
      `SELECT d.id, e.id AS email_id, d.recipient, d.domain, e.team_id, ${STATE} AS state, d.attempts, d.next_attempt_at,
    d.last_reply, d.held_by FROM ${from(f)} WHERE ${w.text} ORDER BY d.email_seq, d.id LIMIT @limit`,
    ),
    { ...w.params, limit },
  );
}

export type GroupKey = 'domain' | 'team' | 'state';
export interface GroupRow {
  key: string;
  recipients: number;
  held: number;
  deferred: number;
  oldest_at: number;
}
const KEY: Record<GroupKey, string> = { domain: 'd.domain', team: 'e.team_id', state: STATE };

/**
 * Counts per group by reading the matching waiting rows (a site summary groups by domain, then the service
 * merges domains into sites). `deferred` as the counters of migration 013 count it: not held, attempted before.
 */
export function summarize(db: DB, by: GroupKey, f: QueueFilter, now: number): Gen<GroupRow[]> {
  const w = where(f, now);
  const text = `SELECT ${KEY[by]} AS key, count(*) AS recipients,
    sum(CASE WHEN d.held_at IS NOT NULL THEN 1 ELSE 0 END) AS held,
    sum(CASE WHEN d.held_at IS NULL AND d.attempts > 0 THEN 1 ELSE 0 END) AS deferred, min(e.created_at) AS oldest_at
    FROM ${from(f)} WHERE ${w.text} GROUP BY 1 ORDER BY 2 DESC`;
  return all(sql<GroupRow>(db, text), ...argsFor(text, w.params));
}

/** The next `limit` matching recipients after the cursor (email_seq, id), in that order: one batch of an action. */
export function candidates(
  db: DB,
  f: QueueFilter,
  now: number,
  after: { seq: number; id: number },
  limit: number,
): Gen<{ id: number; email_seq: number }[]> {
  const w = where(f, now);
  return all(
    sql<{ id: number; email_seq: number }>(
      db,
      `SELECT d.id, d.email_seq FROM ${from(f)} WHERE ${w.text} AND (d.email_seq, d.id) > (@afterSeq, @afterId)
    ORDER BY d.email_seq, d.id LIMIT @limit`,
    ),
    { ...w.params, afterSeq: after.seq, afterId: after.id, limit },
  );
}

/** The recipients of one email with their queue columns. */
export const queueRowsOf = (db: DB, emailSeq: number): Gen<QueueRow[]> =>
  all(sql<QueueRow>(db, 'SELECT * FROM deliveries WHERE email_seq = ? ORDER BY id'), emailSeq);

/**
 * Writes a recipient's hold and due time. A held recipient has next_attempt_at NULL (the due index never
 * offers it); one due again while a lease still runs is due when the lease ends (never sent twice at once).
 * Holds (`heldBy`: who places the hold, migration 021) or releases (null) one recipient; `due` makes it due at once,
 * but not before `notBefore` (a scheduled send). A hold taken over keeps its held_at.
 */
export function* writeQueueState(
  db: DB,
  id: number,
  heldBy: Holder | null,
  due: boolean,
  now: number,
  notBefore = 0,
): Gen<void> {
  // SQLite's max() of several values is PostgreSQL's greatest().
  const text = (
    max: string,
  ) => `UPDATE deliveries SET held_at = CASE WHEN @held THEN coalesce(held_at, @now) ELSE NULL END, held_by = @by,
    next_attempt_at = CASE WHEN @held THEN NULL WHEN @due THEN ${max}(@now, coalesce(leased_until, 0), @notBefore) ELSE next_attempt_at END,
    updated_at = @now WHERE id = @id`;
  const held = heldBy === null ? 0 : 1;
  yield* fire(sql(db, text('max'), text('greatest')), { id, held, by: heldBy, due: due ? 1 : 0, now, notBefore });
}
