// One delivery job: the claimed recipients of one email at one destination domain → MX route →
// one SMTP transaction (several RCPT TO; next MX when a connection fails) → an outcome per
// recipient. VERP: the envelope sender carries the FIRST recipient's delivery token. The source
// address comes from the team's IP pool (sources.ts). Never throws.
import { verpAddress } from '../core/verp.js';
import type { RetryPolicy } from '../core/retry.js';
import type { EmailRow } from '../store/emails.js';
import type { RecipientOutcome } from '../services/transition.js';
import type { Ctx } from '../services/context.js';
import type { Claimed } from './queue.js';
import type { MxResolver } from './mx.js';
import type { SmtpClient, Target, SendResult } from './smtp.js';
import type { Prepared } from './compose.js';
import type { SourcePools } from './sources.js';
import { toOutcome, type Verdict, type AttemptInfo } from './outcome.js';

export interface Job { email: EmailRow; domain: string; rcpts: Claimed[]; /** When it joined its domain's queue. */ queuedAt?: number }
export interface DeliverDeps {
  ctx: Ctx; mx: MxResolver; smtp: SmtpClient; verpSecret: Buffer; policy: RetryPolicy;
  prepare: (email: EmailRow) => Promise<Prepared>;
  /** Longest a job may take (its lease outlives it). */
  deadlineMs: number;
  maxTargets?: number;
  /** Source addresses per team; absent: the kernel chooses. */
  sources?: SourcePools;
}
type Attempt = { verdicts: Verdict[]; info: Partial<SendResult['info']> };

export async function deliverJob(d: DeliverDeps, job: Job): Promise<RecipientOutcome[]> {
  const started = Date.now();
  let a: Attempt;
  try {
    a = await attempt(d, job, started + d.deadlineMs);
  } catch (err) {
    d.ctx.log.error({ err: (err as Error).message, email: job.email.id }, 'delivery job failed unexpectedly');
    a = { verdicts: job.rcpts.map(() => ({ kind: 'deferred', reply: null, command: 'INTERNAL', error: 'internal error' })), info: {} };
  }
  const info: AttemptInfo = { ...a.info, duration_ms: Date.now() - started, source: 'smtp' };
  const now = d.ctx.now();
  return job.rcpts.map((r, i) => toOutcome(r, a.verdicts[i], info, d.policy, now, Math.random()));
}

async function attempt(d: DeliverDeps, job: Job, deadline: number): Promise<Attempt> {
  const all = (v: Verdict): Attempt => ({ verdicts: job.rcpts.map(() => v), info: {} });
  const prepared = await d.prepare(job.email);
  if (!prepared.ok) return all({ kind: 'failed', error: prepared.error, message: prepared.message });
  const route = await d.mx.route(job.domain);
  if (route.kind === 'hard') return all({ kind: 'dns_hard', reason: route.reason, enhanced: route.enhanced, text: route.text });
  if (route.kind === 'defer') return all({ kind: 'deferred', reply: null, command: 'DNS', error: route.text });
  const from = verpAddress(d.verpSecret, job.email.id, job.rcpts[0].id, prepared.returnDomain);
  const rcpts = job.rcpts.map((r) => r.recipient);
  let last: SendResult | null = null;
  let skipped: string | null = null;
  for await (const t of targets(d.mx, route.hosts, d.maxTargets ?? 5)) {
    if (Date.now() >= deadline) break;
    const src = d.sources?.choose(job.email.team_id, t) ?? { kind: 'bind', ip: undefined };
    if (src.kind === 'skip') { skipped = src.reason; continue; }
    last = await d.smtp.send(t, from, rcpts, prepared.raw, deadline, src.ip);
    if (!last.tryNext) break;
  }
  if (!last) return all({ kind: 'deferred', reply: null, command: 'CONN', error: skipped ?? `no reachable address for the MX hosts of ${job.domain}` });
  return { verdicts: last.verdicts, info: last.info };
}

/** (MX host, address) pairs in MX order, resolved lazily. */
async function* targets(mx: MxResolver, hosts: string[], max: number): AsyncGenerator<Target> {
  let n = 0;
  for (const host of hosts) {
    for (const ip of await mx.addresses(host)) {
      if (n++ >= max) return;
      yield { mxHost: host, ip };
    }
  }
}
