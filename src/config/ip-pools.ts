// Per-team source IP pools (setting ipPools / MTA_IP_POOLS): parsing the variable, validating the
// addresses, and which pool a team sends from (its own by id, else by name, else the default). Pure.
import { isIP } from 'node:net';

/** Team id or team name → the IP addresses (no CIDRs: they are bound as source addresses) it sends from. */
export type IpPools = Record<string, string[]>;

/**
 * MTA_IP_POOLS syntax: `team=ip|ip;team=ip`. Entries are separated by `;`, the team (id or name) from its
 * addresses by the first `=`, addresses by `|`; spaces around each part are ignored, empty entries too.
 * A team named with `=`, `;` or `|` can be listed by its id (or in the config file). Throws on bad syntax.
 */
export function parseIpPools(raw: string): IpPools {
  const out: IpPools = {};
  for (const entry of raw
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = entry.indexOf('=');
    if (eq < 0) throw new Error(`entry ${JSON.stringify(entry)} lacks "=" (expected team=ip|ip)`);
    const team = entry.slice(0, eq).trim();
    if (!team) throw new Error(`entry ${JSON.stringify(entry)} names no team`);
    if (Object.hasOwn(out, team)) throw new Error(`team ${JSON.stringify(team)} is listed twice`);
    const ips = entry
      .slice(eq + 1)
      .split('|')
      .map((s) => s.trim());
    if (ips.some((ip) => !ip))
      throw new Error(`team ${JSON.stringify(team)} has an empty address (expected team=ip|ip)`);
    out[team] = ips;
  }
  return out;
}

/** The first problem of a pools object (after the schema check), or null: each address must be a plain IP. */
export function ipPoolsProblem(pools: IpPools): string | null {
  for (const [team, ips] of Object.entries(pools)) {
    const bad = ips.find((ip) => isIP(ip) === 0);
    if (bad !== undefined)
      return `team ${JSON.stringify(team)}: ${JSON.stringify(bad)} is not an IP address (no CIDRs or SPF mechanisms in a pool)`;
    const seen = new Set<string>();
    for (const ip of ips) {
      if (seen.has(ip)) return `team ${JSON.stringify(team)}: ${ip} is listed twice`;
      seen.add(ip);
    }
  }
  return null;
}

/** The pool listed for a team, by id first, then by name; null when the team uses the default pool. */
export function teamPool(pools: IpPools, team: { id: string; name?: string | null }): string[] | null {
  if (Object.hasOwn(pools, team.id)) return pools[team.id];
  if (team.name != null && Object.hasOwn(pools, team.name)) return pools[team.name];
  return null;
}
