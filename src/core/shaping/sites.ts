// Site membership: MX host patterns (`*` = one or more labels) and the site of a domain from its MX hosts —
// the first site in rule order with a pattern matching one of them, else the sorted, lower-case, comma-joined hosts.
import type { SiteRule } from './rules.js';

/** A compiled pattern: `*.suffix` (the common case) is a suffix test; anything else matches label by label. */
interface Compiled {
  suffix: string | null;
  labels: readonly string[];
}

const normal = (host: string) => host.trim().toLowerCase().replace(/\.$/, '');

function compile(pattern: string): Compiled {
  const p = normal(pattern);
  const labels = p.split('.');
  const onlyLeadingStar = labels[0] === '*' && !labels.slice(1).includes('*');
  return { suffix: onlyLeadingStar ? p.slice(1) : null, labels };
}

function matchLabels(p: readonly string[], pi: number, h: readonly string[], hi: number): boolean {
  if (pi === p.length) return hi === h.length;
  if (p[pi] === '*') {
    for (let k = hi + 1; k <= h.length - (p.length - pi - 1); k++) if (matchLabels(p, pi + 1, h, k)) return true;
    return false;
  }
  return hi < h.length && p[pi] === h[hi] && matchLabels(p, pi + 1, h, hi + 1);
}

function matches(c: Compiled, host: string): boolean {
  if (c.suffix !== null)
    return host.length > c.suffix.length && host.endsWith(c.suffix) && host[host.length - c.suffix.length - 1] !== '.';
  return matchLabels(c.labels, 0, host.split('.'), 0);
}

/** Whether an MX host name matches a pattern (`*.google.com` matches `aspmx.l.google.com`, not `google.com`). */
export function mxMatches(pattern: string, host: string): boolean {
  return matches(compile(pattern), normal(host));
}

/** The name of the site of a domain whose MX host set is `hosts`, with no rule matching. */
export function unknownSiteName(hosts: readonly string[]): string {
  return [...new Set(hosts.map(normal))].sort().join(',');
}

export interface SiteMatcher {
  /** the site name for a domain's MX host list (the domain itself when it has no MX: implicit MX) */
  siteOf(mxHosts: readonly string[]): string;
}

/** Compiles the rules' sites once; `siteOf` then tests each site's patterns in order against every host. */
export function siteMatcher(sites: readonly SiteRule[]): SiteMatcher {
  const compiled = sites.map((s) => ({ name: s.name, patterns: s.mx.map(compile) }));
  return {
    siteOf(mxHosts) {
      const hosts = mxHosts.map(normal);
      for (const s of compiled) {
        for (const p of s.patterns) for (const h of hosts) if (matches(p, h)) return s.name;
      }
      return unknownSiteName(hosts);
    },
  };
}
