// Sending-IP health (migration 028): the last check of each IP, the suspension a listing holds, and when each
// ip.alert subject was last sent. Store plans (op.ts).
import { sql, type DB } from './db.js';
import { all, run, type Gen } from './op.js';

export interface IpHealthRow {
  ip: string;
  pool: string;
  reverse_dns: string | null;
  fcrdns: number;
  listings_json: string;
  spf_missing_json: string;
  state: string;
  hold_reason: string | null;
  checked_at: number;
}

export function ipHealthRows(db: DB): Gen<IpHealthRow[]> {
  return all(sql<IpHealthRow>(db, 'SELECT * FROM ip_health ORDER BY ip'));
}

export function* writeIpHealth(db: DB, r: IpHealthRow): Gen<void> {
  const stmt = sql(
    db,
    `INSERT INTO ip_health (ip, pool, reverse_dns, fcrdns, listings_json, spf_missing_json, state, hold_reason, checked_at)
    VALUES (@ip, @pool, @reverse_dns, @fcrdns, @listings_json, @spf_missing_json, @state, @hold_reason, @checked_at)
    ON CONFLICT (ip) DO UPDATE SET pool = excluded.pool, reverse_dns = excluded.reverse_dns, fcrdns = excluded.fcrdns,
      listings_json = excluded.listings_json, spf_missing_json = excluded.spf_missing_json, state = excluded.state,
      hold_reason = excluded.hold_reason, checked_at = excluded.checked_at`,
  );
  yield* run(stmt, r);
}

/** IP → `dnsbl:<zone>` for every IP a listing keeps suspended (the delivery loop reads it every second). */
export function* ipHolds(db: DB): Gen<Map<string, string>> {
  const rows = yield* all(
    sql<{ ip: string; hold_reason: string }>(db, 'SELECT ip, hold_reason FROM ip_health WHERE hold_reason IS NOT NULL'),
  );
  return new Map(rows.map((r) => [r.ip, r.hold_reason]));
}

/** Verified domains with their team (id and name), for the SPF part of the check. */
export function verifiedDomainTeams(db: DB): Gen<{ name: string; team_id: string; team_name: string }[]> {
  return all(
    sql<{ name: string; team_id: string; team_name: string }>(
      db,
      `SELECT d.name, d.team_id, t.name AS team_name FROM domains d JOIN teams t ON t.id = d.team_id
    WHERE d.status = 'verified' ORDER BY d.name`,
    ),
  );
}

/** Records an alert subject as sent at `now` unless it was within `windowMs`; true when it is to be sent. */
export function* claimAlert(db: DB, subject: string, now: number, windowMs: number): Gen<boolean> {
  const stmt = sql(
    db,
    `INSERT INTO ip_alerts (subject, sent_at) VALUES (?, ?)
      ON CONFLICT (subject) DO UPDATE SET sent_at = excluded.sent_at WHERE ip_alerts.sent_at <= ?`,
  );
  return (yield* run(stmt, subject, now, now - windowMs)).changes > 0;
}
