// Source addresses of outbound connections: each team's pool (ipPools, by team id or name) or the
// default pool (sendingIps); the lane IPs of a (team, site) in stable preference order; `default` when none.
import { createHash } from 'node:crypto';
import { isIP, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { teamPool } from '../config/ip-pools.js';
import { teamById } from '../services/delivery.js';
import type { Ctx } from '../services/context.js';
import type { Target } from './smtp.js';

/** Bind `ip`; or let the kernel choose (`ip` undefined); or skip this MX address (the team's pool has no address of its family). */
export type SourceChoice = { kind: 'bind'; ip: string | undefined } | { kind: 'skip'; reason: string };

interface Pool {
  listed: string[];
  bindable: string[];
  own: boolean;
}

/** Linux routes all of 127.0.0.0/8 to `lo`, though os.networkInterfaces() lists only 127.0.0.1. */
const isLoopback4 = (ip: string) => isIP(ip) === 4 && ip.startsWith('127.');

/** The addresses this host holds (can bind), from the interfaces; any 127/8 address counts. */
export function heldBy(interfaces = networkInterfaces()): (ip: string) => boolean {
  const mine = new Set(Object.values(interfaces).flatMap((l) => (l ?? []).map((a) => a.address.toLowerCase())));
  return (ip) => mine.has(ip.toLowerCase()) || isLoopback4(ip);
}

/**
 * Rendezvous (highest random weight) hash: the same key always gets the same address, and adding or
 * removing an address moves only the keys that it wins or held.
 */
export function rendezvous(ips: string[], key: string): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const ip of ips) {
    const score = createHash('sha256').update(`${key}\n${ip}`).digest().readUInt32BE(0);
    if (score > bestScore) {
      best = ip;
      bestScore = score;
    }
  }
  return best;
}

/** The lane name of the kernel-chosen source address (no MTA_SENDING_IPS). */
export const DEFAULT_IP = 'default';

/** `ips` ordered by rendezvous score for `key` (highest first): stable, and an address added moves few keys. */
export function preferenceOrder(ips: readonly string[], key: string): string[] {
  const score = (ip: string) => createHash('sha256').update(`${key}\n${ip}`).digest().readUInt32BE(0);
  return ips
    .map((ip) => ({ ip, s: score(ip) }))
    .sort((a, b) => b.s - a.s)
    .map((x) => x.ip);
}

const sameFamily = (ips: string[], ip: string) => ips.filter((a) => isIP(a) !== 0 && isIPv6(a) === isIPv6(ip));

export class SourcePools {
  private default: Pool;
  private byTeam = new Map<string, Pool>();
  private held: (ip: string) => boolean;

  constructor(
    private ctx: Ctx,
    held = heldBy(),
  ) {
    this.held = held;
    this.default = this.pool(ctx.config.sendingIps, false, 'MTA_SENDING_IPS');
    for (const [team, ips] of Object.entries(ctx.config.ipPools)) this.pool(ips, true, `MTA_IP_POOLS (${team})`); // warn once, at start
  }

  /**
   * The source for a team's connection to `t`: an address of the pool of the MX address's family,
   * picked by hash of (team, MX host) so a destination keeps seeing the same IP. A team's own pool
   * never falls back to other addresses: with none of that family the MX address is skipped.
   */
  choose(teamId: string, t: Target): SourceChoice {
    const p = this.poolOf(teamId);
    const bindable = sameFamily(p.bindable, t.ip);
    if (bindable.length) return { kind: 'bind', ip: rendezvous(bindable, `${teamId}|${t.mxHost}`) };
    if (p.own && sameFamily(p.listed, t.ip).length === 0) {
      return {
        kind: 'skip',
        reason: `the team's IP pool has no IPv${isIPv6(t.ip) ? 6 : 4} address for ${t.mxHost} (${t.ip})`,
      };
    }
    return { kind: 'bind', ip: undefined }; // listed but not held here (NAT, say), or the default pool lacks this family
  }

  /**
   * The lane IPs of a team's mail to `site`, in preference order (rendezvous on the site: a site keeps its
   * first IP): the pool's held addresses, else its listed ones (bound by the kernel), else `default`.
   */
  lanesFor(teamId: string, site: string): { ips: string[]; own: boolean } {
    const p = this.poolOf(teamId);
    const base = p.bindable.length ? p.bindable : p.listed.length ? p.listed : [DEFAULT_IP];
    return { ips: preferenceOrder(base, site), own: p.own };
  }

  /** The address to bind for a lane IP (undefined: the kernel chooses). */
  bindOf(ip: string): string | undefined {
    return ip !== DEFAULT_IP && this.held(ip) ? ip : undefined;
  }

  /** Every lane IP of the configuration with its pool name (`default` for MTA_SENDING_IPS or none). */
  allIps(): { ip: string; pool: string }[] {
    const out = new Map<string, string>();
    const add = (ips: string[], pool: string) => {
      for (const ip of ips.filter((x) => isIP(x) !== 0)) if (!out.has(ip)) out.set(ip, pool);
    };
    for (const [team, ips] of Object.entries(this.ctx.config.ipPools)) add(ips, team);
    add(this.ctx.config.sendingIps, 'default');
    if (this.ctx.config.sendingIps.filter((x) => isIP(x) !== 0).length === 0) out.set(DEFAULT_IP, 'default');
    return [...out].map(([ip, pool]) => ({ ip, pool }));
  }

  private poolOf(teamId: string): Pool {
    const hit = this.byTeam.get(teamId);
    if (hit) return hit;
    const team = teamById(this.ctx.db, teamId);
    const ips = teamPool(this.ctx.config.ipPools, { id: teamId, name: team?.name });
    const p = ips ? this.pool(ips, true, null) : this.default;
    if (team) this.byTeam.set(teamId, p); // team names never change
    return p;
  }

  private pool(listed: string[], own: boolean, warnAs: string | null): Pool {
    const ips = listed.filter((s) => isIP(s) !== 0);
    const other = ips.filter((ip) => !this.held(ip));
    if (other.length && warnAs)
      this.ctx.log.warn({ ips: other }, `${warnAs} not held by this host: not bound as source addresses`);
    return { listed: ips, bindable: ips.filter((ip) => this.held(ip)), own };
  }
}
