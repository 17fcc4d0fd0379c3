// DANE (RFC 7672) for the delivery loop, with MTA_DANE=on: a recipient domain's plan (mta-sts.ts TlsPlan) gets the
// MX hosts DANE applies to (services/dane-lookup.ts), once its MX hosts are known. DANE wins over MTA-STS for those
// hosts; the operator's override wins over DANE. Answers are cached for their TTL (services/secure-dns.ts): a cached
// domain costs no lookup per email.
import { daneHosts, type HostDane } from '../services/dane-lookup.js';
import type { SecureDns } from '../services/secure-dns.js';
import type { Ctx } from '../services/context.js';
import type { TlsPlan } from './mta-sts.js';

export type { HostDane };

export class DanePolicies {
  constructor(
    private ctx: Ctx,
    readonly dns: SecureDns,
  ) {}

  /**
   * The plan with DANE added for the hosts it applies to (`plan.dane`), or as it was: when the operator's override
   * holds, the MX RRset is not secure, or no host has secure TLSA records. Never throws.
   */
  async apply(domain: string, hosts: readonly string[], plan: TlsPlan): Promise<TlsPlan> {
    if (plan.override) return plan;
    try {
      const dane = await daneHosts(this.dns, domain, hosts);
      return dane ? { ...plan, dane } : plan;
    } catch (err) {
      this.ctx.log.warn({ domain, err: (err as Error).message }, 'dane lookup failed');
      const failure = `dane: lookup failed: ${(err as Error).message}`;
      const fail: HostDane = { kind: 'fail', result_type: 'dnssec-invalid', failure };
      return { ...plan, dane: Object.fromEntries(hosts.map((h) => [h, fail])) };
    }
  }
}
