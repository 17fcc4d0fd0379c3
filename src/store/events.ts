// Delivery events of an email, appended in the same transaction as the change that caused them.
// Listeners registered with onEvent (metrics) or onEventPlan (the webhook outbox) run inside that transaction too.
import { sql, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';
import type { EventType } from '../core/status.js';
import type { EmailHead } from './emails.js';

export interface EventRow {
  seq: number;
  id: string;
  team_id: string;
  email_seq: number;
  type: EventType;
  recipient: string | null;
  data_json: string;
  created_at: number;
}
/** `email`: the event's email as this transaction leaves it, when the writer has it (no read needed). */
export type EventListener = (db: DB, ev: EventRow, email?: EmailHead) => void;
/** A listener whose statements are part of the appending plan (the webhook outbox's rows). */
export type EventPlanListener = (db: DB, ev: EventRow, email?: EmailHead) => Gen<unknown>;
const listeners = new WeakMap<DB, EventListener[]>();
const planListeners = new WeakMap<DB, EventPlanListener[]>();

/** Registers a function called (inside the writing transaction) for every appended event. */
export function onEvent(db: DB, fn: EventListener): void {
  const l = listeners.get(db) ?? [];
  l.push(fn);
  listeners.set(db, l);
}

/** Registers a plan run (`yield*`, inside the writing transaction) for every appended event. */
export function onEventPlan(db: DB, fn: EventPlanListener): void {
  planListeners.set(db, [...(planListeners.get(db) ?? []), fn]);
}

/**
 * Appends the event. Its `seq` is read only when asked for: on PostgreSQL the INSERT is a deferred write of the
 * transaction (no round trip of its own) until somebody reads `row.seq`. `email`: the email as this transaction
 * leaves it (its status written or about to be), handed to the listeners so they need not read it.
 */
export function* appendEvent(db: DB, ev: Omit<EventRow, 'seq'>, email?: EmailHead): Gen<EventRow> {
  const text =
    'INSERT INTO events (id, team_id, email_seq, type, recipient, data_json, created_at) VALUES (@id, @team_id, @email_seq, @type, @recipient, @data_json, @created_at)';
  const r = yield* run(sql(db, text), ev);
  const row = { ...ev } as EventRow;
  Object.defineProperty(row, 'seq', { enumerable: true, get: () => Number(r.lastInsertRowid) });
  for (const fn of listeners.get(db) ?? []) fn(db, row, email);
  for (const fn of planListeners.get(db) ?? []) yield* fn(db, row, email);
  return row;
}

export const eventsOf = (db: DB, emailSeq: number, afterSeq: number | null, limit: number) =>
  all(
    sql<EventRow>(db, 'SELECT * FROM events WHERE email_seq = ? AND seq > ? ORDER BY seq LIMIT ?'),
    emailSeq,
    afterSeq ?? 0,
    limit + 1,
  );

/** Whether the email already has an async `bounced` event for this recipient with this reason. */
export function* hasAsyncBounce(db: DB, emailSeq: number, recipient: string, reason: string): Gen<boolean> {
  const s = sql(
    db,
    `SELECT 1 FROM events WHERE email_seq = ? AND recipient = ? AND type = 'bounced'
    AND json_extract(data_json, '$.async') = 1 AND json_extract(data_json, '$.reason') = ? LIMIT 1`,
    `SELECT 1 FROM events WHERE email_seq = ? AND recipient = ? AND type = 'bounced'
    AND (data_json::jsonb -> 'async') = 'true'::jsonb AND (data_json::jsonb ->> 'reason') = ? LIMIT 1`,
  ).pluck();
  return (yield* get(s, emailSeq, recipient, reason)) !== undefined;
}

/** Whether the email has any event of this type. */
export function* hasEventOfType(db: DB, emailSeq: number, type: EventType): Gen<boolean> {
  return (
    (yield* get(sql(db, 'SELECT 1 FROM events WHERE email_seq = ? AND type = ? LIMIT 1'), emailSeq, type)) !== undefined
  );
}

/** Whether this recipient (null: unknown) clicked this URL of the email after `since`. */
export function* clickedSince(
  db: DB,
  emailSeq: number,
  recipient: string | null,
  url: string,
  since: number,
): Gen<boolean> {
  const s = sql(
    db,
    `SELECT 1 FROM events WHERE email_seq = ? AND type = 'clicked' AND recipient IS ? AND created_at > ?
    AND json_extract(data_json, '$.url') = ? LIMIT 1`,
    `SELECT 1 FROM events WHERE email_seq = ? AND type = 'clicked' AND recipient IS NOT DISTINCT FROM ?
    AND created_at > ? AND (data_json::jsonb ->> 'url') = ? LIMIT 1`,
  );
  return (yield* get(s, emailSeq, recipient, since, url)) !== undefined;
}
