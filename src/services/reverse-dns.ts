// Reverse DNS of report source IPs, looked up when a DMARC summary is read (not stored at receipt: names change,
// and a report's receipt must not wait on DNS). Bounded on every side so a slow resolver never makes a summary
// slow: at most LOOKUPS names per call, CONCURRENCY at a time, each with a one-try time-out, and the whole call
// answers by its deadline with null for every name not known by then (lookups under way go on filling the cache).
// Answers are cached per process (names for an hour, failures for five minutes, at most CACHE_MAX entries).
import type { Resolver } from 'node:dns/promises';
import type { Config } from '../config/schema.js';
import { createResolver } from './resolver.js';

/** The name a PTR answer gives: its first name, without the root dot, in lower case (null: none). */
export const ptrName = (names: readonly string[]): string | null => names[0]?.replace(/\.$/, '').toLowerCase() || null;

const LOOKUPS = 100;
const CONCURRENCY = 8;
const LOOKUP_TIMEOUT_MS = 1000;
const DEADLINE_MS = 1500;
const TTL_MS = 3_600_000;
const NEGATIVE_TTL_MS = 300_000;
const CACHE_MAX = 10_000;

export class ReverseDns {
  private cache = new Map<string, { until: number; name: string | null }>();
  private pending = new Map<string, Promise<void>>();

  constructor(
    private resolver: Pick<Resolver, 'reverse'>,
    private now: () => number = Date.now,
  ) {}

  private known(ip: string): { name: string | null } | undefined {
    const hit = this.cache.get(ip);
    return hit && hit.until > this.now() ? hit : undefined;
  }

  private lookup(ip: string): Promise<void> {
    let p = this.pending.get(ip);
    if (p) return p;
    p = this.resolver
      .reverse(ip)
      .then(ptrName, () => null)
      .then((name) => {
        this.cache.delete(ip);
        if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value as string);
        this.cache.set(ip, { until: this.now() + (name ? TTL_MS : NEGATIVE_TTL_MS), name });
        this.pending.delete(ip);
      });
    this.pending.set(ip, p);
    return p;
  }

  /** The reverse name of each IP (null: none, failed, or not known by the deadline), in the order given. */
  async names(ips: readonly string[], deadlineMs = DEADLINE_MS): Promise<(string | null)[]> {
    const todo = ips.filter((ip) => !this.known(ip)).slice(0, LOOKUPS);
    let next = 0;
    let stopped = false;
    const worker = async () => {
      while (!stopped && next < todo.length) await this.lookup(todo[next++]);
    };
    if (todo.length) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)));
      await Promise.race([Promise.all(Array.from({ length: Math.min(CONCURRENCY, todo.length) }, worker)), deadline]);
      stopped = true;
      clearTimeout(timer);
    }
    return ips.map((ip) => this.known(ip)?.name ?? null);
  }
}

const perConfig = new WeakMap<Config, ReverseDns>();

/** The process's reverse-DNS cache for a configuration (MTA_DNS_SERVERS). */
export function reverseDnsFor(config: Config): ReverseDns {
  let r = perConfig.get(config);
  if (!r)
    perConfig.set(config, (r = new ReverseDns(createResolver(config, { timeoutMs: LOOKUP_TIMEOUT_MS, tries: 1 }))));
  return r;
}
