// One delivery: one recipient of one email over one (source IP, site) lane → one SMTP transaction (MAIL FROM
// with that delivery's own VERP token, one RCPT, DATA; pipelined when offered) on a session of the lane's pool,
// reused across transactions; next MX address when a connection fails → a Verdict. Never throws.
import { isIP, isIPv6 } from 'node:net';
import { verpAddress } from '../core/verp.js';
import { isNeverReachable } from '../core/webhook-address.js';
import type { RetryPolicy } from '../core/retry.js';
import type { Ctx } from '../services/context.js';
import type { MxResolver } from './mx.js';
import type { Target, SendResult } from './smtp.js';
import type { Smtp } from './transport.js';
import type { Verdict } from './verdict.js';
import type { AttemptTls } from './outcome.js';
import { allowedHosts, type TlsPlan } from './mta-sts.js';
import type { HostDane } from './dane.js';
import type { SendOptions } from './smtp.js';

export interface DeliverDeps {
  ctx: Ctx;
  mx: MxResolver;
  /** an SmtpClient, or the Transport that sends on the outbound worker */
  smtp: Smtp;
  verpSecret: Buffer;
  policy: RetryPolicy;
  /** Longest a transaction may take (its lease outlives it). */
  deadlineMs: number;
  maxTargets?: number;
}

/** What one send needs: the message, the recipient, the route and the lane. */
export interface Send {
  emailId: string;
  deliveryId: number;
  recipient: string;
  domain: string;
  raw: Buffer;
  returnDomain: string;
  hosts: readonly string[];
  /** the lane's source address to bind (undefined: the kernel's choice), whether it is a team's own pool, the session pool key */
  bind: string | undefined;
  ownPool: boolean;
  pool: string;
  maxMessages: number;
  /** the lane's connection limit (more messages than that may be in flight: they wait for a session) */
  maxSessions: number;
  /** the recipient domain's TLS (MTA-STS, the operator's override); undefined: MTA_OUTBOUND_TLS */
  tls?: TlsPlan;
  /**
   * How long the transaction may take, when less than DeliverDeps.deadlineMs: the lease was set before a wait (its
   * confirmation on the pool), and the transaction must still end before the lease does.
   */
  budgetMs?: number;
}
export interface Sent {
  verdict: Verdict;
  info: Partial<Omit<SendResult['info'], 'tls_verified' | 'tls_error' | 'tls_result'>> & { tls?: AttemptTls };
  closed: boolean;
  /** never went out (SendResult.notStarted): not an attempt */
  notStarted?: boolean;
}

export async function deliverOne(d: DeliverDeps, s: Send): Promise<Sent> {
  try {
    return await attempt(d, s, Date.now() + Math.min(d.deadlineMs, s.budgetMs ?? Infinity));
  } catch (err) {
    d.ctx.log.error({ err: (err as Error).message, email: s.emailId }, 'delivery failed unexpectedly');
    return {
      verdict: { kind: 'deferred', reply: null, command: 'INTERNAL', error: 'internal error' },
      info: {},
      closed: true,
    };
  }
}

async function attempt(d: DeliverDeps, s: Send, deadline: number): Promise<Sent> {
  const from = verpAddress(d.verpSecret, s.emailId, s.deliveryId, s.returnDomain);
  let skipped: string | null = null;
  let last: Sent | null = null;
  const refused: Refused = { hosts: [] };
  const plan: TlsPlan = s.tls ?? { policy: d.ctx.config.outboundTls === 'off' ? 'none' : 'opportunistic' };
  const allowed = allowedHosts(plan, s.hosts);
  // MTA-STS enforce: only the MX hosts its patterns name (and those DANE applies to); none → deferred, no connection.
  const hosts = plan.mode === 'enforce' ? s.hosts.filter((h) => allowed.includes(h) || plan.dane?.[h]) : s.hosts;
  if (plan.mode === 'enforce' && hosts.length === 0) return noPolicyMx(s, plan);
  for await (const t of targets(d.mx, hosts, d.maxTargets ?? 5, refused)) {
    if (Date.now() >= deadline) break;
    const dane = plan.dane?.[t.mxHost];
    // DANE: a host whose TLSA lookup failed where it would have been secure is skipped (next MX), never downgraded.
    if (dane?.kind === 'fail') {
      last = daneFailed(t.mxHost, dane);
      continue;
    }
    // A bound source address talks only to MX addresses of its own family.
    if (s.bind !== undefined && isIP(s.bind) !== 0 && isIPv6(s.bind) !== isIPv6(t.ip)) {
      if (s.ownPool) skipped = `the team's IP pool has no IPv${isIPv6(t.ip) ? 6 : 4} address for ${t.mxHost} (${t.ip})`;
      continue;
    }
    const res = await d.smtp.send(t, from, [s.recipient], s.raw, deadline, s.bind, {
      pool: s.pool,
      maxMessages: s.maxMessages,
      maxSessions: s.maxSessions,
      ...tlsOptions(plan, dane),
    });
    last = {
      verdict: res.verdicts[0],
      info: withTls(res.info, plan, allowed.includes(t.mxHost), res.verdicts[0], dane),
      closed: res.closed,
      notStarted: res.notStarted,
    };
    if (!res.tryNext) return last;
  }
  if (last) return last;
  if (refused.hosts.length === hosts.length) return invalidMx(d, s, refused.hosts);
  return {
    verdict: {
      kind: 'deferred',
      reply: null,
      command: 'CONN',
      error: skipped ?? `no reachable address for the MX hosts of ${s.domain}`,
    },
    info: {},
    closed: true,
  };
}

/** A send's TLS: DANE for a host it applies to (DANE wins over MTA-STS), else the domain's plan. */
function tlsOptions(plan: TlsPlan, dane: HostDane | undefined): Pick<SendOptions, 'tls' | 'dane'> {
  if (dane?.kind === 'dane') return { tls: 'dane', dane: { records: dane.records, names: dane.names } };
  return { tls: plan.tls };
}

/**
 * The attempt's `tls` (operations.md "Transport security"); MTA-STS testing: what enforce would have refused; a DANE
 * or MTA-STS failure (either mode) also carries its RFC 8460 `result_type` (counted in TLS reports).
 */
function withTls(info: SendResult['info'], plan: TlsPlan, listed: boolean, v: Verdict, dane?: HostDane): Sent['info'] {
  const { tls_verified, tls_error, tls_result, ...rest } = info;
  const tls: AttemptTls = {
    version: info.tls_version,
    cipher: info.tls_cipher,
    verified: tls_verified === true,
    policy: dane ? 'dane' : plan.policy,
  };
  if (dane) {
    if (tls_error) tls.failure = tls_error;
    if (tls_result) tls.result_type = tls_result;
  } else if (plan.mode === 'testing') {
    const failure = !listed
      ? `${info.mx_host} does not match the policy's mx`
      : tls_verified === true
        ? null
        : (tls_error ?? 'no STARTTLS');
    if (failure) tls.failure = failure;
  }
  if (plan.mode && !dane) {
    const why = !listed ? 'validation-failure' : stsResultType(tls_verified, tls_error, v);
    if (why) tls.result_type = why;
  }
  return { ...rest, tls };
}

/** Why an MTA-STS attempt's TLS fell short, in RFC 8460 §4.3 terms; null when it did not. */
function stsResultType(verified: boolean | null | undefined, error: string | undefined, v: Verdict): string | null {
  if (verified === true) return null;
  // enforce: the session was refused before it carried anything (smtp-tls.ts setupVerdict, `mta_sts: …`)
  const why = error ?? (v.kind === 'deferred' && v.reason === 'mta_sts' ? v.error : undefined);
  // no session at all (connection refused, timed out): not a TLS outcome
  if (why === undefined && verified === undefined) return null;
  if (why === undefined) return verified === false ? 'validation-failure' : 'starttls-not-supported';
  if (/not valid for /.test(why)) return 'certificate-host-mismatch';
  if (/CERT_HAS_EXPIRED/.test(why)) return 'certificate-expired';
  if (/certificate not trusted/.test(why)) return 'certificate-not-trusted';
  if (/STARTTLS required|no TLS/.test(why)) return 'starttls-not-supported';
  return 'validation-failure';
}

/** MTA-STS enforce and no MX host of the domain matches the policy: deferred 4.7.5 `mta_sts`, nothing sent. */
function noPolicyMx(s: Send, plan: TlsPlan): Sent {
  const error = `mta_sts: no MX host of ${s.domain} (${s.hosts.join(', ')}) matches its policy (${plan.mx!.join(', ')})`;
  return {
    verdict: { kind: 'deferred', reply: null, command: 'CONN', reason: 'mta_sts', enhanced: '4.7.5', error },
    info: {
      tls: { version: null, cipher: null, verified: false, policy: plan.policy, result_type: 'validation-failure' },
    },
    closed: true,
  };
}

/** DANE applies to the MX host but its TLSA (or address) lookup failed: deferred 4.7.5 `dane`, no connection. */
function daneFailed(host: string, f: Extract<HostDane, { kind: 'fail' }>): Sent {
  return {
    verdict: { kind: 'deferred', reply: null, command: 'DNS', reason: 'dane', enhanced: '4.7.5', error: f.failure },
    info: {
      mx_host: host,
      tls: {
        version: null,
        cipher: null,
        verified: false,
        policy: 'dane',
        failure: f.failure,
        result_type: f.result_type,
      },
    },
    closed: true,
  };
}

/** The MX hosts whose every address was refused ("host (ip, ip)"). */
interface Refused {
  hosts: string[];
}

/**
 * Every address of every MX host is one no connection may reach (core/webhook-address.ts `isNeverReachable`):
 * bounced `invalid_mx` without a connection, `mx_address_refused` in the reply and the log.
 */
function invalidMx(d: DeliverDeps, s: Send, hosts: string[]): Sent {
  const text = `mx_address_refused: ${hosts.join(', ')}: link-local, unspecified, multicast, broadcast or cloud-metadata addresses are never connected to`;
  d.ctx.log.warn({ email: s.emailId, domain: s.domain, mx: hosts }, 'mx_address_refused');
  return { verdict: { kind: 'dns_hard', reason: 'invalid_mx', enhanced: '5.4.4', text }, info: {}, closed: true };
}

/** (MX host, address) pairs in MX order, resolved lazily; refused addresses are left out (and noted in `refused`). */
async function* targets(
  mx: MxResolver,
  hosts: readonly string[],
  max: number,
  refused: Refused,
): AsyncGenerator<Target> {
  let n = 0;
  for (const host of hosts) {
    const all = await mx.addresses(host);
    const ips = all.filter((ip) => !isNeverReachable(ip));
    if (all.length > 0 && ips.length === 0) refused.hosts.push(`${host} (${all.join(', ')})`);
    for (const ip of ips) {
      if (n++ >= max) return;
      yield { mxHost: host, ip };
    }
  }
}
