// Builds the outbound delivery component from the shared context: resolver (MTA_DNS_SERVERS), MX cache,
// shaping rules (MTA_SHAPING_FILE), SMTP pool (on the outbound worker thread), source IP pools, retry policy, lease and limits. Nothing runs on import.
import { createResolver } from '../services/resolver.js';
import { secretOf, onEvent, setIntake } from '../services/delivery.js';
import { shapingFor } from '../services/shaping.js';
import { afterWrites } from '../services/nudges.js';
import type { Ctx } from '../services/context.js';
import { MxResolver } from './mx.js';
import { SmtpClient } from './smtp.js';
import { OutboundLoop, type LoopOptions } from './loop.js';
import { prepareEmail } from './compose.js';
import { SourcePools } from './sources.js';
import { Control } from './control.js';
import { SignerPool } from './signer.js';
import { Transport } from './transport.js';
import { StsPolicies } from './mta-sts.js';
import { DanePolicies } from './dane.js';
import { SecureDns } from '../services/secure-dns.js';
import { readCaFile } from '../config/check.js';

export { OutboundLoop } from './loop.js';

/** Lease and job deadline: a job always ends before its lease; the lease never exceeds MTA_RETRY_MAX_SECONDS. */
export function timings(c: Ctx['config']): { leaseMs: number; deadlineMs: number } {
  const timeoutMs = c.outboundTimeoutSeconds * 1000;
  const lease = Math.min(c.retryMaxSeconds * 1000, Math.max(60_000, timeoutMs * 8));
  return { leaseMs: lease, deadlineMs: Math.min(timeoutMs * 6, lease * 0.8) };
}

/** `stsMemoMs`: how long a domain's TLS plan is remembered in memory (60 s; tests set 0). */
export function createOutbound(
  ctx: Ctx,
  overrides: Partial<LoopOptions> = {},
  opts: { stsMemoMs?: number } = {},
): OutboundLoop {
  const c = ctx.config;
  const timeoutMs = c.outboundTimeoutSeconds * 1000;
  const resolver = createResolver(c, { timeoutMs: Math.round(Math.max(200, Math.min(3000, timeoutMs / 3))), tries: 2 });
  const shaping = shapingFor(c);
  if (c.outboundPerDomainConcurrency !== 20)
    ctx.log.warn(
      "MTA_OUTBOUND_PER_DOMAIN_CONCURRENCY no longer does anything: set the site's connections in the shaping rules",
    );
  let loop: OutboundLoop | null = null;
  const ca = readCaFile(c); // MTA_TLS_CA_FILE, checked at start
  const sts = new StsPolicies(ctx, resolver, {
    enabled: c.mtaSts === 'on',
    port: c.stsHttpsPort,
    ca,
    timeoutMs: Math.max(1000, Math.min(10_000, timeoutMs)),
    memoMs: opts.stsMemoMs ?? 60_000,
  });
  // DANE's validated lookups: the same servers and time-outs as the resolver's.
  const dnsTimeoutMs = Math.round(Math.max(200, Math.min(3000, timeoutMs / 3)));
  const dane =
    c.dane === 'on' ? new DanePolicies(ctx, new SecureDns(c, { timeoutMs: dnsTimeoutMs, tries: 2 })) : undefined;
  if (dane && !dane.dns.loopbackOnly)
    ctx.log.warn('MTA_DANE=on with a resolver not on this host: its AD bit is believed as it comes (docs/outbound.md)');
  const smtpOptions = {
    ca,
    hostname: c.hostname,
    port: c.outboundPort,
    tls: c.outboundTls,
    timeoutMs,
    maxMessages: c.outboundMessagesPerConnection,
  };
  // An idle connection of a lane closed: the scheduler may open another.
  const onIdleClosed = (key: string) => {
    const [ip, site] = key.split(' ');
    loop?.sched.closed(ip, site);
  };
  // SMTP sessions run on the outbound worker thread (with composing and signing); on this thread until it is up.
  const signer = new SignerPool(ctx.log);
  signer.useSmtp(smtpOptions, onIdleClosed);
  const smtp = new Transport(new SmtpClient({ ...smtpOptions, onIdleClosed }), signer);
  // Only addresses this host holds are bound; others (a NAT'd public address listed for SPF) are left
  // to the kernel's choice, with a warning at start (sources.ts).
  const sources = new SourcePools(ctx);
  const { leaseMs, deadlineMs } = timings(c);
  let verp: Buffer | null = null;
  loop = new OutboundLoop(
    ctx,
    {
      ctx,
      mx: new MxResolver(resolver),
      sts,
      dane,
      smtp,
      sources,
      shaping,
      deadlineMs,
      prepare: (e) => prepareEmail(ctx, e, signer.sign),
      signer,
      messagesPerConnection: c.outboundMessagesPerConnection,
      policy: { minSeconds: c.retryMinSeconds, maxSeconds: c.retryMaxSeconds, lifetimeSeconds: c.queueLifetimeSeconds },
      get verpSecret() {
        return (verp ??= secretOf(ctx.db, 'verp'));
      },
    },
    {
      concurrency: c.outboundConcurrency,
      leaseMs,
      batch: 200,
      maxHeld: Math.max(1000, c.outboundConcurrency * 5),
      idlePollMs: 1000,
      graceMs: Math.min(10_000, deadlineMs),
      ...overrides,
    },
  );
  loop.control = new Control(ctx, loop);
  setIntake(ctx.db, loop); // new mail due now comes straight in while the loop has room (services/delivery.ts)
  // Wake-up: an accepted email appends its `queued` event; the loop looks at once (and claims only when Intake did
  // not take its recipients: OutboundLoop.tick). An operator's release or retry nudges it to claim (services/queue.ts).
  // The look comes once the email's transaction committed: on PostgreSQL a submit turn on the pool commits after
  // this (its event is written inside it), and a claim or next-due read made before would not see a scheduled email.
  onEvent(ctx.db, (_db, ev) => {
    if (ev.type === 'queued') afterWrites(ctx.db, () => loop!.poke());
  });
  return loop;
}
