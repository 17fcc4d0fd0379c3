// Alerts (services/alerts.ts): the live endpoints subscribed to an alert kind, and the operator's alert outbox
// (migration 029, posted by webhooks/dispatcher.ts). Row access only.
import { sql, type DB } from './db.js';
import { all, run, type Gen } from './op.js';

export interface AlertEndpoint {
  seq: number;
  team_id: string;
  team_name: string;
}
/** Enabled live endpoints subscribed to `kind`, with their team's id and name. */
export function* liveEndpointsFor(db: DB, kind: string): Gen<AlertEndpoint[]> {
  const rows = yield* all(
    sql<AlertEndpoint & { events: string }>(
      db,
      `SELECT e.seq, e.team_id, t.name AS team_name, e.events FROM webhook_endpoints e JOIN teams t ON t.id = e.team_id
    WHERE e.enabled = 1 AND e.mode = 'live'`,
    ),
  );
  return rows.filter((e) => e.events.split(' ').includes(kind));
}

export interface OperatorAlertRow {
  seq: number;
  event_id: string;
  payload: string;
  attempts: number;
  next_attempt_at: number | null;
  last_error: string | null;
  created_at: number;
  completed_at: number | null;
}
export const insertOperatorAlert = (db: DB, eventId: string, payload: string, now: number) =>
  run(
    sql(db, 'INSERT INTO operator_alerts (event_id, payload, next_attempt_at, created_at) VALUES (?, ?, ?, ?)'),
    eventId,
    payload,
    now,
    now,
  );

/** Claims up to `limit` due rows (inside a transaction): their next_attempt_at moves to the lease's end. */
export function* claimOperatorAlerts(db: DB, now: number, leaseUntil: number, limit: number): Gen<OperatorAlertRow[]> {
  const pick =
    'SELECT * FROM operator_alerts WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?';
  const rows = yield* all(sql<OperatorAlertRow>(db, pick, `${pick} FOR UPDATE SKIP LOCKED`), now, limit);
  const lease = sql(db, 'UPDATE operator_alerts SET next_attempt_at = ? WHERE seq = ?');
  for (const r of rows) yield* run(lease, leaseUntil, r.seq);
  return rows;
}
/** One attempt's result: `next` null ends the row (sent, or given up), else it is due again then. */
export const recordOperatorAttempt = (db: DB, seq: number, error: string | null, next: number | null, now: number) =>
  run(
    sql(
      db,
      `UPDATE operator_alerts SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, completed_at = ?
    WHERE seq = ?`,
    ),
    error,
    next,
    next === null ? now : null,
    seq,
  );
/** The row was claimed but not attempted (the sender is stopping): due again now. */
export const releaseOperatorAlert = (db: DB, seq: number, now: number) =>
  run(sql(db, 'UPDATE operator_alerts SET next_attempt_at = ? WHERE seq = ? AND completed_at IS NULL'), now, seq);
export const operatorAlertRows = (db: DB) =>
  all(sql<OperatorAlertRow>(db, 'SELECT * FROM operator_alerts ORDER BY seq'));
/** Drops rows that ended before `before`. */
export function* pruneOperatorAlerts(db: DB, before: number): Gen<number> {
  const text = 'DELETE FROM operator_alerts WHERE completed_at IS NOT NULL AND completed_at < ?';
  return (yield* run(sql(db, text), before)).changes;
}
