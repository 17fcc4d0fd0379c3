// Where mail for a domain goes: MX lookup (preference order, random among equals), implicit MX
// (the domain's own A/AAAA), null MX and NXDOMAIN as hard bounces, DNS failures as deferrals; cached (addresses by TTL).
import { isIP } from 'node:net';
import type { Resolver } from 'node:dns/promises';

export interface MxRecord {
  exchange: string;
  priority: number;
}
export type Route =
  | { kind: 'hosts'; hosts: string[] }
  | { kind: 'hard'; reason: 'hostunknown' | 'notaccept'; enhanced: string; text: string }
  | { kind: 'defer'; text: string };

type Raw = { kind: 'mx'; records: MxRecord[] } | Exclude<Route, { kind: 'hosts' }>;

const NO_NAME = new Set(['ENOTFOUND', 'ENODATA']);
const errCode = (err: unknown) => String((err as { code?: string }).code ?? 'EUNKNOWN');

/** Preference order, shuffled among equal preferences. Pure apart from `random`. */
export function orderMx(records: readonly MxRecord[], random: () => number = Math.random): string[] {
  const keyed = records.map((r) => ({ r, k: random() }));
  keyed.sort((a, b) => a.r.priority - b.r.priority || a.k - b.k);
  return keyed.map((x) => x.r.exchange.replace(/\.$/, '').toLowerCase());
}

/** RFC 7505: a single MX whose exchange is the root name. */
export const isNullMx = (records: readonly MxRecord[]) =>
  records.length === 1 && (records[0].exchange === '' || records[0].exchange === '.');

export class MxResolver {
  private cache = new Map<string, { until: number; value: Promise<unknown> }>();
  constructor(
    private resolver: Resolver,
    /** ttlMs: MX answers (no TTL from node:dns resolveMx); min/maxTtlMs: bounds of the addresses' own TTL */
    private opts: { ttlMs?: number; minTtlMs?: number; maxTtlMs?: number; random?: () => number } = {},
  ) {}

  /** Hosts to try for a recipient domain, or a hard bounce / deferral. */
  async route(domain: string): Promise<Route> {
    const raw = await this.cached(
      `mx:${domain}`,
      () => this.lookupMx(domain),
      (r) => r.kind !== 'defer',
    );
    if (raw.kind !== 'mx') return raw;
    return { kind: 'hosts', hosts: orderMx(raw.records, this.opts.random) };
  }

  /** IPv4 then IPv6 addresses of an MX host; empty when it has none (or DNS failed). Cached by their DNS TTL. */
  async addresses(host: string): Promise<string[]> {
    if (isIP(host)) return [host];
    const r = await this.cached(
      `a:${host}`,
      () => this.lookupAddresses(host),
      (a) => a.list.length > 0,
      (a) => a.ttl,
    );
    return r.list;
  }

  /** The addresses and their smallest TTL (s). */
  private async lookupAddresses(host: string): Promise<{ list: string[]; ttl: number | null }> {
    const list: string[] = [];
    let ttl: number | null = null;
    for (const lookup of [
      () => this.resolver.resolve4(host, { ttl: true }),
      () => this.resolver.resolve6(host, { ttl: true }),
    ]) {
      try {
        for (const r of await lookup()) {
          list.push(r.address);
          ttl = ttl === null ? r.ttl : Math.min(ttl, r.ttl);
        }
      } catch {
        /* no address of this family */
      }
    }
    return { list, ttl };
  }

  private async lookupMx(domain: string): Promise<Raw> {
    try {
      const records = await this.resolver.resolveMx(domain);
      if (isNullMx(records))
        return {
          kind: 'hard',
          reason: 'notaccept',
          enhanced: '5.1.10',
          text: `${domain} accepts no mail (null MX, RFC 7505)`,
        };
      if (records.length) return { kind: 'mx', records };
      return this.implicit(domain);
    } catch (err) {
      const code = errCode(err);
      if (code === 'ENODATA') return this.implicit(domain);
      if (code === 'ENOTFOUND')
        return { kind: 'hard', reason: 'hostunknown', enhanced: '5.1.2', text: `${domain}: no such domain (NXDOMAIN)` };
      return { kind: 'defer', text: `DNS lookup of MX ${domain} failed: ${code}` };
    }
  }

  /** No MX records: the domain's own address records act as an MX of preference 0 (RFC 5321 5.1). */
  private async implicit(domain: string): Promise<Raw> {
    const outcomes = await Promise.allSettled([this.resolver.resolve4(domain), this.resolver.resolve6(domain)]);
    if (outcomes.some((o) => o.status === 'fulfilled' && o.value.length > 0))
      return { kind: 'mx', records: [{ exchange: domain, priority: 0 }] };
    const failed = outcomes.find((o) => o.status === 'rejected' && !NO_NAME.has(errCode(o.reason)));
    if (failed)
      return {
        kind: 'defer',
        text: `DNS lookup of ${domain} failed: ${errCode((failed as PromiseRejectedResult).reason)}`,
      };
    return {
      kind: 'hard',
      reason: 'hostunknown',
      enhanced: '5.1.2',
      text: `${domain} has no MX and no address record`,
    };
  }

  /**
   * One lookup per key while fresh: `ttlMs` (60 s) unless `ttlOf` gives the answer's DNS TTL (seconds), then that
   * TTL bounded to [minTtlMs, maxTtlMs] (60 s – 1 h). Answers `keep` refuses (failures) are not cached.
   */
  private cached<T>(
    key: string,
    load: () => Promise<T>,
    keep: (v: T) => boolean,
    ttlOf?: (v: T) => number | null,
  ): Promise<T> {
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && hit.until > now) return hit.value as Promise<T>;
    const value = load();
    const entry = { until: now + (this.opts.ttlMs ?? 60_000), value };
    this.cache.set(key, entry);
    const drop = () => {
      if (this.cache.get(key) === entry) this.cache.delete(key);
    };
    value.then((v) => {
      if (!keep(v)) return drop();
      const ttl = ttlOf?.(v);
      if (ttl === undefined || ttl === null) return;
      const { minTtlMs = 60_000, maxTtlMs = 3_600_000 } = this.opts;
      entry.until = Date.now() + Math.min(maxTtlMs, Math.max(minTtlMs, ttl * 1000));
    }, drop);
    if (this.cache.size > 10_000) this.cache.delete(this.cache.keys().next().value as string);
    return value;
  }
}
