// Delivery insight counters (migration 011): per team, mode, UTC hour and type (stats_hourly) and per
// site, hour and outcome (site_hourly). Upserts run inside the caller's transaction; reads are key ranges.
import { sql, type DB } from './db.js';
import { all, get, run, transaction, type Gen } from './op.js';

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
export function* bumpStat(db: DB, teamId: string, testMode: number, hour: number, type: string, n = 1): Gen<void> {
  // PostgreSQL: appended to this transaction's deltas, folded at COMMIT in key order (migrations-pg/014, 017).
  yield* run(
    sql(
      db,
      `INSERT INTO stats_hourly (team_id, test_mode, hour, type, n) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (team_id, test_mode, hour, type) DO UPDATE SET n = n + excluded.n`,
      'INSERT INTO stats_hourly_delta (team_id, test_mode, hour, type, n) VALUES (?, ?, ?, ?, ?)',
    ),
    teamId,
    testMode,
    hour,
    type,
    n,
  );
}

/** A team's counters of one mode for the hours in [fromHour, toHour). */
export const statsBetween = (db: DB, teamId: string, testMode: number, fromHour: number, toHour: number) =>
  all(
    sql<StatRow>(
      db,
      'SELECT hour, type, n FROM stats_hourly WHERE team_id = ? AND test_mode = ? AND hour >= ? AND hour < ?',
    ),
    teamId,
    testMode,
    fromHour,
    toHour,
  );

/** Adds `n` to a site's counter of `kind` (delivered, deferred, bounced) for the hour starting at `hour`. */
export function* bumpSite(db: DB, site: string, hour: number, kind: string, n = 1): Gen<void> {
  yield* run(
    sql(
      db,
      `INSERT INTO site_hourly (hour, site, kind, n) VALUES (?, ?, ?, ?)
    ON CONFLICT (hour, site, kind) DO UPDATE SET n = n + excluded.n`,
      'INSERT INTO site_hourly_delta (hour, site, kind, n) VALUES (?, ?, ?, ?)',
    ),
    hour,
    site,
    kind,
    n,
  );
}

/** Every site's counters from `fromHour` on. */
export const siteStatsSince = (db: DB, fromHour: number) =>
  all(sql<SiteStatRow>(db, 'SELECT hour, site, kind, n FROM site_hourly WHERE hour >= ?'), fromHour);

/** Drops site counters older than `beforeHour` (a key range: the rows are ordered by hour). */
export function* pruneSiteStats(db: DB, beforeHour: number): Gen<number> {
  return (yield* run(sql(db, 'DELETE FROM site_hourly WHERE hour < ?'), beforeHour)).changes;
}

export interface SiteFigureRow {
  site: string;
  type: string;
  n: number;
}

/** Adds `n` to a team's per-site figure `type` (migration 027) for the hour starting at `hour` (ms). */
export function* bumpSiteStat(
  db: DB,
  key: { teamId: string; testMode: number; hour: number; site: string },
  type: string,
  n: number,
): Gen<void> {
  // PostgreSQL: appended to this transaction's deltas, folded at COMMIT in key order (migrations-pg/027).
  yield* run(
    sql(
      db,
      `INSERT INTO site_stats_hourly (team_id, test_mode, hour, site, type, n) VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (team_id, test_mode, hour, site, type) DO UPDATE SET n = n + excluded.n`,
      'INSERT INTO site_stats_hourly_delta (team_id, test_mode, hour, site, type, n) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    key.teamId,
    key.testMode,
    key.hour,
    key.site,
    type,
    n,
  );
}

/** A team's per-site figures of one mode summed over the hours in [fromHour, toHour) (a key range). */
export function* siteFiguresBetween(
  db: DB,
  teamId: string,
  testMode: number,
  fromHour: number,
  toHour: number,
): Gen<SiteFigureRow[]> {
  const text = `SELECT site, type, sum(n) AS n FROM site_stats_hourly
    WHERE team_id = ? AND test_mode = ? AND hour >= ? AND hour < ? GROUP BY site, type`;
  const rows = yield* all(sql<SiteFigureRow>(db, text), teamId, testMode, fromHour, toHour);
  return rows.map((r) => ({ ...r, n: Number(r.n) }));
}

const DAY_MS = 86_400_000;

/**
 * Drops a team's counters of one mode (stats_hourly, then site_stats_hourly) for the hours before `beforeHour`: a
 * range of each primary key, one day of the oldest left per transaction, so that a first pass over years of counters
 * never holds the write lock long. Returns how many rows went.
 */
export function* pruneTeamStats(db: DB, teamId: string, testMode: number, beforeHour: number): Gen<number> {
  let total = 0;
  for (const table of ['stats_hourly', 'site_stats_hourly']) {
    const oldest = sql<number | null>(db, `SELECT min(hour) FROM ${table} WHERE team_id = ? AND test_mode = ?`).pluck();
    const drop = sql(db, `DELETE FROM ${table} WHERE team_id = ? AND test_mode = ? AND hour < ?`);
    for (;;) {
      const first = yield* get(oldest, teamId, testMode);
      if (first === null || first === undefined || Number(first) >= beforeHour) break;
      const to = Math.min(beforeHour, Number(first) + DAY_MS);
      total += yield* transaction(db, function* () {
        return (yield* run(drop, teamId, testMode, to)).changes;
      });
    }
  }
  return total;
}

/** Drops up to `limit` domain_sites rows not written since `before` (migration 034's index); how many went. */
export function* pruneDomainSites(db: DB, before: number, limit: number): Gen<number> {
  const text = `DELETE FROM domain_sites WHERE domain IN (SELECT domain FROM domain_sites WHERE seen_at < ? LIMIT ?)`;
  return (yield* run(sql(db, text), before, limit)).changes;
}

/** The site a recipient domain was last delivered to (migration 027), if any. */
export const siteOfDomain = (db: DB, domain: string) =>
  get(sql<string>(db, 'SELECT site FROM domain_sites WHERE domain = ?').pluck(), domain);

/** Notes the site the delivery loop delivered a domain's mail to. */
export const noteDomainSite = (db: DB, domain: string, site: string, at: number) =>
  run(
    sql(
      db,
      `INSERT INTO domain_sites (domain, site, seen_at) VALUES (?, ?, ?)
    ON CONFLICT (domain) DO UPDATE SET site = excluded.site, seen_at = excluded.seen_at`,
    ),
    domain,
    site,
    at,
  );
