// Delivery-control state in SQLite: per (IP, site) lane rows and per-site figures the delivery loop writes
// every second, operator commands the CLI queues for the loop, and warming IPs. Plans (op.ts).
import { sql, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';

export interface LaneRow {
  ip: string;
  site: string;
  state: 'open' | 'throttled' | 'suspended';
  until: number | null;
  reason: string | null;
  rate: number | null;
  blocklisted: number;
  day: number;
  sent_today: number;
  updated_at: number;
}
export interface SiteRow {
  site: string;
  mx_json: string;
  queued: number;
  in_flight: number;
  sent_last_hour: number;
  domains_json: string;
  updated_at: number;
}
export interface CommandRow {
  id: number;
  kind: 'suspend' | 'resume';
  site: string;
  ip: string | null;
  seconds: number | null;
  reason: string | null;
  created_at: number;
  applied_at: number | null;
}
export interface WarmupRow {
  ip: string;
  started_at: number;
  start_day: number;
}

export const lanes = (db: DB): Gen<LaneRow[]> =>
  all(sql<LaneRow>(db, 'SELECT * FROM delivery_lanes ORDER BY site, ip'));

export const sites = (db: DB): Gen<SiteRow[]> => all(sql<SiteRow>(db, 'SELECT * FROM delivery_sites ORDER BY site'));

/** Writes the loop's view (one transaction by the caller). */
export function* upsertLane(db: DB, l: Omit<LaneRow, 'updated_at'>, now: number): Gen<void> {
  const s = sql(
    db,
    `INSERT INTO delivery_lanes (ip, site, state, until, reason, rate, blocklisted, day, sent_today, updated_at)
    VALUES (@ip, @site, @state, @until, @reason, @rate, @blocklisted, @day, @sent_today, @now)
    ON CONFLICT (site, ip) DO UPDATE SET state = excluded.state, until = excluded.until, reason = excluded.reason, rate = excluded.rate,
      blocklisted = excluded.blocklisted, day = excluded.day, sent_today = excluded.sent_today, updated_at = excluded.updated_at`,
  );
  yield* run(s, { ...l, now });
}

export function* deleteLane(db: DB, site: string, ip: string): Gen<void> {
  yield* run(sql(db, 'DELETE FROM delivery_lanes WHERE site = ? AND ip = ?'), site, ip);
}

export function* upsertSite(db: DB, s: Omit<SiteRow, 'updated_at'>, now: number): Gen<void> {
  const stmt = sql(
    db,
    `INSERT INTO delivery_sites (site, mx_json, queued, in_flight, sent_last_hour, domains_json, updated_at)
    VALUES (@site, @mx_json, @queued, @in_flight, @sent_last_hour, @domains_json, @now)
    ON CONFLICT (site) DO UPDATE SET mx_json = excluded.mx_json, queued = excluded.queued, in_flight = excluded.in_flight,
      sent_last_hour = excluded.sent_last_hour, domains_json = excluded.domains_json, updated_at = excluded.updated_at`,
  );
  yield* run(stmt, { ...s, now });
}

export function* addCommand(
  db: DB,
  c: Pick<CommandRow, 'kind' | 'site' | 'ip' | 'seconds' | 'reason'>,
  now: number,
): Gen<number> {
  const text =
    'INSERT INTO delivery_commands (kind, site, ip, seconds, reason, created_at) VALUES (@kind, @site, @ip, @seconds, @reason, @now)';
  return Number((yield* run(sql(db, text), { ...c, now })).lastInsertRowid);
}

export const pendingCommands = (db: DB): Gen<CommandRow[]> =>
  all(sql<CommandRow>(db, 'SELECT * FROM delivery_commands WHERE applied_at IS NULL ORDER BY id'));

export const commandById = (db: DB, id: number): Gen<CommandRow | undefined> =>
  get(sql<CommandRow>(db, 'SELECT * FROM delivery_commands WHERE id = ?'), id);

export function* markApplied(db: DB, id: number, now: number): Gen<void> {
  yield* run(sql(db, 'UPDATE delivery_commands SET applied_at = ? WHERE id = ?'), now, id);
}

export const warmups = (db: DB): Gen<WarmupRow[]> => all(sql<WarmupRow>(db, 'SELECT * FROM ip_warmups ORDER BY ip'));

export function* setWarmup(db: DB, ip: string, w: { started_at: number; start_day: number } | null): Gen<void> {
  if (w === null) yield* run(sql(db, 'DELETE FROM ip_warmups WHERE ip = ?'), ip);
  else {
    const text =
      'INSERT INTO ip_warmups (ip, started_at, start_day) VALUES (?, ?, ?) ON CONFLICT (ip) DO UPDATE SET started_at = excluded.started_at, start_day = excluded.start_day';
    yield* run(sql(db, text), ip, w.started_at, w.start_day);
  }
}
