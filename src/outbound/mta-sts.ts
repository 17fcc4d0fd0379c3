// MTA-STS (RFC 8461) for the delivery loop: what TLS a recipient domain gets (TlsPlan), from the operator's override
// (services/tls-policy.ts), the domain's `_mta-sts` TXT id, its policy as cached in the store (refetched when the id
// changes or max_age ran out; a failed refetch keeps the cached one while it is unexpired) and the HTTPS fetch of
// https://mta-sts.<domain>/.well-known/mta-sts.txt (the address from the service's resolver, MTA_STS_HTTPS_PORT,
// certificate verified for that name with the system CAs plus MTA_TLS_CA_FILE; 64 KiB, no redirects).
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import type { Resolver } from 'node:dns/promises';
import { MAX_POLICY_BYTES, parseStsPolicy, stsMxMatches, stsRecordId, type StsPolicy } from '../core/mta-sts.js';
import { resolveAddresses } from '../services/resolver.js';
import { isNeverReachable } from '../core/webhook-address.js';
import { cachedSts, saveSts, tlsOverride } from '../services/tls-policy.js';
import type { Ctx } from '../services/context.js';
import type { HostDane } from './dane.js';

/** How one recipient domain's mail goes (docs/outbound.md "Transport security"). */
export interface TlsPlan {
  /** what the attempt's `details.tls.policy` says */
  policy: 'mta-sts' | 'opportunistic' | 'none';
  /** SendOptions.tls (undefined: MTA_OUTBOUND_TLS) */
  tls?: 'verified' | 'opportunistic' | 'off';
  /** the MTA-STS mode applied, and its `mx` patterns (none: any MX host of the domain) */
  mode?: 'enforce' | 'testing';
  mx?: string[];
  /** set by the operator's override (`mta tls-policy set`): it wins over DANE too */
  override?: true;
  /** DANE (RFC 7672, outbound/dane.ts) per MX host it applies to; it takes precedence over the rest for those hosts */
  dane?: Record<string, HostDane>;
}

export interface StsOptions {
  enabled: boolean;
  port: number;
  /** extra CA (PEM) */
  ca?: string;
  timeoutMs: number;
  /** how long a domain's plan is remembered in memory (its TXT lookup and store read) */
  memoMs: number;
}

export class StsPolicies {
  private memo = new Map<string, { until: number; plan: Promise<TlsPlan> }>();
  /** policy fetches made (for tests and metrics) */
  fetches = 0;
  constructor(
    private ctx: Ctx,
    private resolver: Resolver,
    private o: StsOptions,
  ) {}

  /** The plan for a domain; never throws (a failure is logged and gives the default plan). */
  planFor(domain: string): Promise<TlsPlan> {
    const now = Date.now();
    const hit = this.memo.get(domain);
    if (hit && hit.until > now) return hit.plan;
    const plan = this.decide(domain).catch((err) => {
      this.ctx.log.warn({ domain, err: (err as Error).message }, 'tls policy lookup failed');
      this.memo.delete(domain);
      return this.fallback();
    });
    this.memo.set(domain, { until: now + this.o.memoMs, plan });
    if (this.memo.size > 10_000) this.memo.delete(this.memo.keys().next().value as string);
    return plan;
  }

  private fallback(): TlsPlan {
    return { policy: this.ctx.config.outboundTls === 'off' ? 'none' : 'opportunistic' };
  }

  private async decide(domain: string): Promise<TlsPlan> {
    const override = await tlsOverride(this.ctx, domain);
    if (override === 'off') return { policy: 'none', tls: 'off', override: true };
    if (override === 'opportunistic') return { policy: 'opportunistic', tls: 'opportunistic', override: true };
    if (override === 'enforce') {
      const p = this.o.enabled ? await this.policy(domain) : null;
      const mx = p && p.mode !== 'none' ? p.mx : undefined;
      return { policy: 'mta-sts', tls: 'verified', mode: 'enforce', mx, override: true };
    }
    if (!this.o.enabled) return this.fallback();
    const p = await this.policy(domain);
    if (!p || p.mode === 'none') return this.fallback();
    if (p.mode === 'testing') return { ...this.fallback(), policy: 'mta-sts', mode: 'testing', mx: p.mx };
    return { policy: 'mta-sts', tls: 'verified', mode: 'enforce', mx: p.mx };
  }

  /** The domain's policy: cached while its id is the TXT record's and max_age lasts, else fetched. */
  private async policy(domain: string): Promise<StsPolicy | null> {
    const [id, cached] = await Promise.all([this.recordId(domain), cachedSts(this.ctx, domain)]);
    const now = this.ctx.now();
    const live = cached && cached.expires_at > now ? cached : null;
    // No record (or DNS failed): a cached, unexpired policy still holds (RFC 8461 §5.1).
    if (id === null) return live;
    if (live && live.id === id) return live;
    try {
      const fetched = await this.fetch(domain);
      return await saveSts(this.ctx, domain, id, fetched);
    } catch (err) {
      this.ctx.log.warn({ domain, err: (err as Error).message, cached: !!live }, 'mta-sts policy fetch failed');
      return live;
    }
  }

  /** The `_mta-sts` TXT record's id; null when there is none (or the lookup failed). */
  private async recordId(domain: string): Promise<string | null> {
    try {
      return stsRecordId((await this.resolver.resolveTxt(`_mta-sts.${domain}`)).map((r) => r.join('')));
    } catch {
      return null;
    }
  }

  private async fetch(domain: string): Promise<StsPolicy> {
    const host = `mta-sts.${domain}`;
    // Never an address no connection may reach (link-local, cloud metadata…), as for MX hosts (deliver.ts).
    const ip = (await resolveAddresses(this.resolver, host)).find((a) => !isNeverReachable(a));
    if (!ip) throw new Error(`${host} has no address that may be connected to`);
    this.fetches++;
    const text = await httpsText(ip, host, this.o);
    const p = parseStsPolicy(text);
    if ('error' in p) throw new Error(`policy of ${domain}: ${p.error}`);
    return p;
  }
}

/** GET https://<name>/.well-known/mta-sts.txt from `ip`: 200 text/plain, at most MAX_POLICY_BYTES, verified TLS. */
function httpsText(ip: string, name: string, o: StsOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: ip,
        port: o.port,
        path: '/.well-known/mta-sts.txt',
        servername: name,
        headers: { host: name },
        agent: false,
        rejectUnauthorized: true,
        ...(o.ca ? { ca: [...rootCertificates, o.ca] } : {}),
        timeout: o.timeoutMs,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`HTTP ${res.statusCode} from ${name}`));
        }
        if (!/^text\/plain\b/i.test(String(res.headers['content-type'] ?? ''))) {
          res.resume();
          return reject(new Error(`${name} answered ${String(res.headers['content-type'])}, not text/plain`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_POLICY_BYTES) {
            req.destroy(new Error(`policy over ${MAX_POLICY_BYTES} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
      },
    );
    // `timeout`: the socket idle that long; the timer: the whole fetch at most twice that.
    const whole = setTimeout(() => req.destroy(new Error(`policy fetch from ${name} timed out`)), o.timeoutMs * 2);
    req.on('timeout', () => req.destroy(new Error(`policy fetch from ${name} timed out`)));
    req.on('error', reject);
    req.on('close', () => clearTimeout(whole));
  });
}

/** The MX hosts an `enforce` plan allows (all when it names no patterns). */
export function allowedHosts(plan: TlsPlan, hosts: readonly string[]): readonly string[] {
  return plan.mx ? hosts.filter((h) => stsMxMatches(h, plan.mx!)) : hosts;
}
