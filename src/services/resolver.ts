// The DNS resolver the delivery loop and the domain checks share, built from MTA_DNS_SERVERS
// (empty = the system's resolvers), with a short time-out so a dead server means a deferral.
import { Resolver } from 'node:dns/promises';
import type { Config } from '../config/schema.js';

export function createResolver(
  config: Pick<Config, 'dnsServers'>,
  opts: { timeoutMs?: number; tries?: number } = {},
): Resolver {
  const r = new Resolver({ timeout: opts.timeoutMs ?? 3000, tries: opts.tries ?? 2 });
  if (config.dnsServers.length) r.setServers(config.dnsServers);
  return r;
}

/** The A and AAAA addresses of a name ([] when it has none or the lookup fails). */
export async function resolveAddresses(resolver: Resolver, host: string): Promise<string[]> {
  const [a, aaaa] = await Promise.all([
    resolver.resolve4(host).catch(() => []),
    resolver.resolve6(host).catch(() => []),
  ]);
  return [...a, ...aaaa];
}
