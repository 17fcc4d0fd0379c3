// recordFeedback: acts on one inbound report in one transaction: an async bounce, an in-flight
// rejection or a complaint for the delivery a verified VERP token names (or, for a complaint signed by
// a listed feedback loop, the recipient it names), via applyOutcomes; and stores the report itself.
import { FINAL } from '../core/status.js';
import { newId } from '../core/ids.js';
import type { EmailRow, DeliveryRow } from '../store/emails.js';
import { hasAsyncBounce } from '../store/events.js';
import { insertInboundReport, reportAlreadyApplied, type ReportOutcome } from '../store/inbound-reports.js';
import type { Report, ReportRecipient, ReportParser } from '../core/report.js';
import { applyOutcomesPlan, type RecipientOutcome } from './transition.js';
import { findEmail, matchRecipients, type EmailMatch, type RecipientMatch } from './feedback-match.js';
import { fblSigner } from './fbl-auth.js';
import type { Ctx } from './context.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { runLocking } from '../store/pg/plan-driver.js';

/** Raw bytes kept for a report that changed nothing; the rest is dropped (raw_size says how much). */
export const RAW_CAP = 64 * 1024;
/**
 * Bytes of a message the parser reads. Everything a report says (notice, delivery-status or
 * feedback-report part, the returned message's headers) comes first; the returned body can be
 * megabytes, and parsing it would block the event loop for seconds.
 */
export const PARSE_CAP = 256 * 1024;

export interface InboundEnvelope {
  mailFrom: string | null;
  rcptTo: string[];
  remoteIp: string | null;
}
/**
 * How the listener read the message: its parser (a worker pool; default ctx.parseReport) and the size
 * when it kept only the first PARSE_CAP bytes.
 */
export interface ReadOptions {
  parse?: ReportParser;
  size?: number;
}
export interface FeedbackResult {
  id: string;
  kind: Report['kind'];
  outcome: ReportOutcome;
  emailId: string | null;
  applied: number;
}

type Decision = RecipientOutcome | 'duplicate' | null;

function compact(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));
}

/**
 * Event data of a DSN bounce. `final_recipient` says which address failed when it is not the delivery's
 * (a forward target or alias). Only a report that names our address (as Final-Recipient, or as
 * Original-Recipient when an alias forwarded it) or names none (`exact`, or no address at all) can be
 * `hard`; one naming only another address is recorded but never suppresses our recipient.
 */
function bounceData(r: ReportRecipient, exact: boolean, ours: string): Record<string, unknown> {
  const code = r.replycode && /^[245]\d\d$/.test(r.replycode) ? Number(r.replycode) : null;
  const other = r.address && r.address.toLowerCase() !== ours.toLowerCase() ? r.address : null;
  return compact({
    reason: r.reason,
    hard: r.hard === true && (exact || !r.address),
    enhanced_status: r.status,
    smtp_code: code,
    smtp_response: r.diagnostic,
    source: 'dsn',
    provider: r.provider,
    final_recipient: other,
  });
}

type Matched = RecipientMatch & { delivery: DeliveryRow };

/** What one reported recipient does to its delivery (decisions.md); null: nothing. */
function* decide(
  ctx: Ctx,
  kind: Report['kind'],
  { recipient: r, delivery: d, exact }: Matched,
  email: EmailRow,
): Gen<Decision> {
  if (kind === 'arf') {
    return d.status === 'delivered'
      ? {
          deliveryId: d.id,
          event: 'complaint',
          data: compact({ reason: 'feedback', feedback_type: r.feedback_type, source: 'arf' }),
        }
      : null;
  }
  // Only a final failure counts: `delayed` DSNs are warnings (the relay keeps trying), and
  // delivered/relayed/expanded notices or vacation replies change nothing.
  if (kind !== 'dsn' || r.action !== 'failed' || ['vacation', 'delivered', 'feedback'].includes(r.reason)) return null;
  if (d.status === 'delivered') {
    if (yield* hasAsyncBounce(ctx.db, email.seq, d.recipient, r.reason)) return 'duplicate';
    return { deliveryId: d.id, event: 'async_bounce', data: { ...bounceData(r, exact, d.recipient), async: true } };
  }
  return FINAL.has(d.status)
    ? null
    : { deliveryId: d.id, event: 'rejected', data: { ...bounceData(r, exact, d.recipient), async: false } };
}

function reportMessageId(raw: Buffer): string | null {
  const head =
    raw
      .subarray(0, Math.min(raw.length, 64 * 1024))
      .toString('latin1')
      .split(/\r?\n\r?\n/)[0] ?? '';
  return /^message-id:\s*(<[^>\s]+>)/im.exec(head)?.[1] ?? null;
}

/** `trusted`: a complaint signed by a listed feedback loop (fbl-auth.ts). */
function* effects(
  ctx: Ctx,
  m: EmailMatch | null,
  report: Report,
  messageId: string | null,
  trusted: boolean,
): Gen<{ outcome: ReportOutcome; applied: number }> {
  if (!m) return { outcome: 'unmatched', applied: 0 };
  // Matched by Message-ID alone (anyone can quote one) and not vouched for: kept for the operator only.
  if (m.deliveryId === null && !trusted) return { outcome: 'ignored', applied: 0 };
  if (messageId && (yield* reportAlreadyApplied(ctx.db, m.email.seq, messageId)))
    return { outcome: 'duplicate', applied: 0 };
  const pairs = (yield* matchRecipients(ctx, m, report, trusted)).filter((p): p is Matched => p.delivery !== null);
  if (!pairs.length) return { outcome: 'unmatched', applied: 0 };
  const decisions: Decision[] = [];
  for (const p of pairs) decisions.push(yield* decide(ctx, report.kind, p, m.email));
  const outcomes = decisions.filter((x): x is RecipientOutcome => x !== null && x !== 'duplicate');
  if (outcomes.length) yield* applyOutcomesPlan(ctx, m.email.seq, outcomes);
  if (outcomes.length) return { outcome: 'applied', applied: outcomes.length };
  return { outcome: decisions.includes('duplicate') ? 'duplicate' : 'ignored', applied: 0 };
}

/** Reads, matches and acts on one inbound message; always stores it. Throws only on store errors. */
export async function recordFeedback(
  ctx: Ctx,
  raw: Buffer,
  env: InboundEnvelope,
  read: ReadOptions = {},
): Promise<FeedbackResult> {
  const parse = read.parse ?? ctx.parseReport;
  if (!parse) throw new Error('recordFeedback: no report parser (ReadOptions.parse or ctx.parseReport)');
  const report = await parse(raw.length > PARSE_CAP ? raw.subarray(0, PARSE_CAP) : raw);
  const messageId = reportMessageId(raw);
  const id = newId('rep', ctx.now());
  // DKIM (DNS) only for a complaint that has nothing better than a Message-ID.
  const signer =
    report.kind === 'arf' && (await runPlan(ctx.db, findEmail(ctx, report, env.rcptTo)))?.by === 'message_id'
      ? await fblSigner(ctx, raw)
      : null;
  // PostgreSQL: on the pool with the result batches, which lock the same recipients' and emails' rows.
  const tx = transaction(ctx.db, () => recordPlan(ctx, raw, env, read, report, messageId, id, signer));
  return runLocking(ctx.db, tx, { durable: true });
}

function* recordPlan(
  ctx: Ctx,
  raw: Buffer,
  env: InboundEnvelope,
  read: ReadOptions,
  report: Report,
  messageId: string | null,
  id: string,
  signer: string | null,
): Gen<FeedbackResult> {
  const m = yield* findEmail(ctx, report, env.rcptTo);
  const { outcome, applied } = yield* effects(ctx, m, report, messageId, signer !== null && report.kind === 'arf');
  const keepRaw = outcome !== 'applied';
  const row = {
    id,
    kind: report.kind,
    outcome,
    team_id: m?.email.team_id ?? null,
    email_seq: m?.email.seq ?? null,
    email_id: m?.email.id ?? null,
    matched_by: m?.by ?? null,
    report_message_id: messageId,
    mail_from: env.mailFrom,
    rcpt_to: env.rcptTo.join(','),
    remote_ip: env.remoteIp,
    parsed_json: JSON.stringify(report),
    raw_size: read.size ?? raw.length,
    raw: keepRaw ? raw.subarray(0, RAW_CAP) : null,
    raw_truncated: keepRaw && raw.length > RAW_CAP ? 1 : 0,
    created_at: ctx.now(),
  };
  yield* insertInboundReport(ctx.db, row);
  ctx.log.info(
    {
      report: id,
      kind: report.kind,
      outcome,
      email: m?.email.id ?? null,
      matched_by: m?.by ?? null,
      fbl_signer: signer,
      applied,
    },
    'inbound report',
  );
  return { id, kind: report.kind, outcome, emailId: m?.email.id ?? null, applied };
}
