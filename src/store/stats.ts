// Delivery insight counters (migration 011): per team, mode, UTC hour and type (stats_hourly) and per
// site, hour and outcome (site_hourly). Upserts run inside the caller's transaction; reads are key ranges.
import { sql, type DB } from './db.js';

export interface StatRow {
  hour: number;
  type: string;
  n: number;
}
export interface SiteStatRow {
  hour: number;
  site: string;
  kind: string;
  n: number;
}

/** Adds `n` to a team's counter of `type` for the hour starting at `hour` (ms). */
export function bumpStat(db: DB, teamId: string, testMode: number, hour: number, type: string, n = 1): void {
  // PostgreSQL: appended to this transaction's deltas, folded at COMMIT in key order (migrations-pg/014, 017).
  sql(
    db,
    `INSERT INTO stats_hourly (team_id, test_mode, hour, type, n) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (team_id, test_mode, hour, type) DO UPDATE SET n = n + excluded.n`,
    'INSERT INTO stats_hourly_delta (team_id, test_mode, hour, type, n) VALUES (?, ?, ?, ?, ?)',
  ).run(teamId, testMode, hour, type, n);
}

/** A team's counters of one mode for the hours in [fromHour, toHour). */
export const statsBetween = (db: DB, teamId: string, testMode: number, fromHour: number, toHour: number) =>
  sql<StatRow>(
    db,
    'SELECT hour, type, n FROM stats_hourly WHERE team_id = ? AND test_mode = ? AND hour >= ? AND hour < ?',
  ).all(teamId, testMode, fromHour, toHour);

/** Adds `n` to a site's counter of `kind` (delivered, deferred, bounced) for the hour starting at `hour`. */
export function bumpSite(db: DB, site: string, hour: number, kind: string, n = 1): void {
  sql(
    db,
    `INSERT INTO site_hourly (hour, site, kind, n) VALUES (?, ?, ?, ?)
    ON CONFLICT (hour, site, kind) DO UPDATE SET n = n + excluded.n`,
    'INSERT INTO site_hourly_delta (hour, site, kind, n) VALUES (?, ?, ?, ?)',
  ).run(hour, site, kind, n);
}

/** Every site's counters from `fromHour` on. */
export const siteStatsSince = (db: DB, fromHour: number) =>
  sql<SiteStatRow>(db, 'SELECT hour, site, kind, n FROM site_hourly WHERE hour >= ?').all(fromHour);

/** Drops site counters older than `beforeHour` (a key range: the rows are ordered by hour). */
export const pruneSiteStats = (db: DB, beforeHour: number) =>
  sql(db, 'DELETE FROM site_hourly WHERE hour < ?').run(beforeHour).changes;
