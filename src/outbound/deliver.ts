// One delivery job: the claimed recipients of one email at one destination domain → MX route → one
// SMTP transaction PER RECIPIENT (MAIL FROM with that delivery's own VERP token, one RCPT, DATA), in
// turn on a reused session; next MX when a connection fails → an outcome per recipient. The message
// is built once per email (`prepare`); the source address comes from the team's IP pool. Never throws.
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
type Info = Partial<SendResult['info']>;
/** Per recipient (same index as job.rcpts): its verdict (undefined: not tried yet) and where it went. */
type Attempt = { verdicts: (Verdict | undefined)[]; infos: Info[] };

export async function deliverJob(d: DeliverDeps, job: Job): Promise<RecipientOutcome[]> {
  const started = Date.now();
  let a: Attempt;
  try {
    a = await attempt(d, job, started + d.deadlineMs);
  } catch (err) {
    d.ctx.log.error({ err: (err as Error).message, email: job.email.id }, 'delivery job failed unexpectedly');
    a = uniform(job, { kind: 'deferred', reply: null, command: 'INTERNAL', error: 'internal error' });
  }
  const duration = Date.now() - started;
  const now = d.ctx.now();
  return job.rcpts.map((r, i) => {
    const info: AttemptInfo = { ...a.infos[i], duration_ms: duration, source: 'smtp' };
    const v = a.verdicts[i] ?? { kind: 'deferred', reply: null, command: 'CONN', error: 'delivery deadline reached' };
    return toOutcome(r, v, info, d.policy, now, Math.random());
  });
}

const uniform = (job: Job, v: Verdict): Attempt => ({ verdicts: job.rcpts.map(() => v), infos: job.rcpts.map(() => ({})) });

async function attempt(d: DeliverDeps, job: Job, deadline: number): Promise<Attempt> {
  const prepared = await d.prepare(job.email);
  if (!prepared.ok) return uniform(job, { kind: 'failed', error: prepared.error, message: prepared.message });
  const route = await d.mx.route(job.domain);
  if (route.kind === 'hard') return uniform(job, { kind: 'dns_hard', reason: route.reason, enhanced: route.enhanced, text: route.text });
  if (route.kind === 'defer') return uniform(job, { kind: 'deferred', reply: null, command: 'DNS', error: route.text });
  const a: Attempt = { verdicts: job.rcpts.map(() => undefined), infos: job.rcpts.map(() => ({})) };
  let pending = job.rcpts.map((_, i) => i);
  let skipped: string | null = null;
  for await (const t of targets(d.mx, route.hosts, d.maxTargets ?? 5)) {
    if (!pending.length || Date.now() >= deadline) break;
    const src = d.sources?.choose(job.email.team_id, t) ?? { kind: 'bind', ip: undefined };
    if (src.kind === 'skip') { skipped = src.reason; continue; }
    pending = await sendEach(d, job, { t, raw: prepared.raw, returnDomain: prepared.returnDomain, source: src.ip, deadline }, pending, a);
  }
  const none: Verdict = { kind: 'deferred', reply: null, command: 'CONN', error: skipped ?? `no reachable address for the MX hosts of ${job.domain}` };
  for (const i of pending) a.verdicts[i] ??= none;
  return a;
}

interface Leg { t: Target; raw: Buffer; returnDomain: string; source: string | undefined; deadline: number }

/**
 * One transaction per pending recipient to `leg.t`, in order; the session pool hands the same
 * connection back each time (RSET only after a failed one). Returns the recipients to try at the
 * next address: the connection failed before their transaction. When the server turned a
 * transaction away before judging its recipient (time-out, drop, 4xx to MAIL), the rest of the job
 * is deferred the same way instead of knocking again at once.
 */
async function sendEach(d: DeliverDeps, job: Job, leg: Leg, pending: number[], a: Attempt): Promise<number[]> {
  for (let k = 0; k < pending.length; k++) {
    const i = pending[k];
    if (Date.now() >= leg.deadline) return [];
    const r = job.rcpts[i];
    const from = verpAddress(d.verpSecret, job.email.id, r.id, leg.returnDomain);
    const res = await d.smtp.send(leg.t, from, [r.recipient], leg.raw, leg.deadline, leg.source);
    const v = res.verdicts[0];
    a.verdicts[i] = v;
    a.infos[i] = res.info;
    if (res.tryNext) return pending.slice(k);
    if (v.kind === 'deferred' && v.command !== 'RCPT' && v.command !== 'DATA') {
      for (const j of pending.slice(k + 1)) { a.verdicts[j] = v; a.infos[j] = res.info; }
      return [];
    }
  }
  return [];
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
