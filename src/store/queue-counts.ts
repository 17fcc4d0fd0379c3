// The unfiltered queue summary from the counters of migration 013 (per team and recipient domain, kept by
// triggers in each write's transaction) and the oldest waiting email per group from index seeks, never a scan.
import { sql, type DB } from './db.js';
import type { GroupRow } from './queue-admin.js';

/** Must read exactly like the partial indexes' WHERE (SQLite matches the term's text). */
const WAITING = "d.status IN ('queued', 'sent', 'delivery_delayed')";

/**
 * The creation time of the domain's oldest waiting email: the first entry of the partial index
 * deliveries_waiting_domain (domain, email_seq), then the email by its key.
 */
const OLDEST_OF_DOMAIN = `SELECT e.created_at FROM emails e
  WHERE e.seq = (SELECT min(d.email_seq) FROM deliveries d WHERE d.domain = @key AND ${WAITING})`;

/**
 * The team's oldest waiting email: an email with a waiting recipient is itself not final (core/status
 * aggregate), so the first email with a waiting recipient in each non-final status, by emails_team_status.
 */
const firstOf = (
  status: string,
) => `SELECT (SELECT e.seq FROM emails e WHERE e.team_id = @key AND e.status = '${status}'
  AND EXISTS (SELECT 1 FROM deliveries d WHERE d.email_seq = e.seq AND ${WAITING}) ORDER BY e.seq LIMIT 1) AS s`;
const OLDEST_OF_TEAM = `SELECT e.created_at FROM emails e WHERE e.seq = (SELECT min(s) FROM (${firstOf('queued')}
  UNION ALL ${firstOf('sent')} UNION ALL ${firstOf('delivery_delayed')}))`;

/** Counts per domain or team of every waiting recipient: O(teams × domains with mail waiting). */
export function summarizeCounts(db: DB, by: 'domain' | 'team'): GroupRow[] {
  const key = by === 'domain' ? 'domain' : 'team_id';
  const groups = sql<Omit<GroupRow, 'oldest_at'>>(
    db,
    `SELECT ${key} AS key, sum(recipients) AS recipients, sum(held) AS held, sum(deferred) AS deferred
    FROM queue_counts GROUP BY 1 HAVING sum(recipients) > 0 ORDER BY 2 DESC`,
  ).all();
  const oldest = sql<number>(db, by === 'domain' ? OLDEST_OF_DOMAIN : OLDEST_OF_TEAM).pluck();
  return groups.map((g) => ({ ...g, oldest_at: oldest.get({ key: g.key }) ?? Infinity }));
}

/** One snapshot (a read transaction): the counters and the seeks see the same writes. */
export const summarizeFromCounts = (db: DB, by: 'domain' | 'team'): GroupRow[] =>
  db.transaction(() => summarizeCounts(db, by))();
