// The counters a batch of delivery results bumps (GET /v1/stats, GET /v1/stats/sites), summed in memory and written
// once per key when the batch writes its rows (services/transition.ts OutcomeBatch): a batch of 15 delivered emails
// of one team is one `delivered` upsert instead of 15, and one per site figure instead of 15 of each. Same
// transaction, so what is counted still commits or rolls back with the rows it counts.
import { bumpSite, bumpSiteStat, bumpStat } from '../store/stats.js';
import type { Gen } from '../store/op.js';
import type { Ctx } from './context.js';

interface StatKey {
  teamId: string;
  testMode: number;
  hour: number;
}
interface SiteKey extends StatKey {
  site: string;
}

/** Sums `n` into `map` under `key`, remembering `entry` (without its count) the first time. */
function add<E extends object>(map: Map<string, E & { n: number }>, key: string, entry: E, n: number): void {
  const e = map.get(key);
  if (e) e.n += n;
  else map.set(key, { ...entry, n });
}

export class CounterTally {
  private readonly stats = new Map<string, { key: StatKey; type: string; n: number }>();
  private readonly sites = new Map<string, { key: SiteKey; type: string; n: number }>();
  private readonly attempts = new Map<string, { site: string; hour: number; kind: string; n: number }>();

  /** Adds `n` to a team's counter of `type` for the hour (store/stats.ts bumpStat). */
  stat(key: StatKey, type: string, n = 1): void {
    add(this.stats, `${key.teamId}\0${key.testMode}\0${key.hour}\0${type}`, { key, type }, n);
  }

  /** Adds `n` to a team's per-site figure `type` for the hour (store/stats.ts bumpSiteStat). */
  siteStat(key: SiteKey, type: string, n: number): void {
    add(this.sites, `${key.teamId}\0${key.testMode}\0${key.hour}\0${key.site}\0${type}`, { key, type }, n);
  }

  /** Adds `n` to a site's attempt outcome `kind` for the hour, all teams (store/stats.ts bumpSite). */
  site(site: string, hour: number, kind: string, n: number): void {
    add(this.attempts, `${site}\0${hour}\0${kind}`, { site, hour, kind }, n);
  }

  /** Writes the sums (in the caller's transaction) and forgets them. */
  *flush(ctx: Ctx): Gen<void> {
    for (const { key, type, n } of this.stats.values())
      yield* bumpStat(ctx.db, key.teamId, key.testMode, key.hour, type, n);
    for (const { key, type, n } of this.sites.values()) yield* bumpSiteStat(ctx.db, key, type, n);
    for (const { site, hour, kind, n } of this.attempts.values()) yield* bumpSite(ctx.db, site, hour, kind, n);
    this.stats.clear();
    this.sites.clear();
    this.attempts.clear();
  }
}
