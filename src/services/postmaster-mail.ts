// recordPostmasterMail: a message to postmaster@ or abuse@ (RFC 5321 §4.5.1, RFC 2142) at MTA_HOSTNAME or the bounce
// domain. Nothing acts on it: it is kept for the operator as an inbound report of kind `postmaster` (raw capped,
// `mta reports list` / `mta reports show`), and never relayed.
import { RAW_CAP, type InboundEnvelope } from './feedback.js';
import { keepForOperator } from './kept-mail.js';
import { runPlan } from '../store/op.js';
import type { Ctx } from './context.js';

/** A header's value as sent (unfolded, first 200 characters), from the header block only; null when absent. */
function header(head: string, name: string): string | null {
  const m = new RegExp(`^${name}:[ \\t]*([^\\r\\n]*(?:\\r?\\n[ \\t][^\\r\\n]*)*)`, 'im').exec(head);
  return m
    ? m[1]
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim()
        .slice(0, 200)
    : null;
}

export async function recordPostmasterMail(
  ctx: Ctx,
  raw: Buffer,
  env: InboundEnvelope,
  size: number,
): Promise<{ id: string }> {
  const text = raw.subarray(0, RAW_CAP).toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const head = end < 0 ? text : text.slice(0, end);
  const parsed = {
    kind: 'postmaster',
    recipients: [],
    original: { message_id: null, email_id: null, return_path: null },
    from: header(head, 'From'),
    subject: header(head, 'Subject'),
    message_id: header(head, 'Message-ID'),
  };
  const id = await runPlan(ctx.db, keepForOperator(ctx, { kind: 'postmaster', parsed, raw, env, size }));
  ctx.log.info({ report: id, rcpt: env.rcptTo, from: env.mailFrom }, 'mail to postmaster kept for the operator');
  return { id };
}
