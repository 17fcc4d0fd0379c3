// recordPostmasterMail: a message to postmaster@ or abuse@ (RFC 5321 §4.5.1, RFC 2142) at MTA_HOSTNAME or the bounce
// domain. Nothing acts on it: it is kept for the operator as an inbound report of kind `postmaster` (raw capped,
// `mta reports list` / `mta reports show`), and never relayed.
import { newId } from '../core/ids.js';
import { insertInboundReport } from '../store/inbound-reports.js';
import { RAW_CAP, type InboundEnvelope } from './feedback.js';
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

export function recordPostmasterMail(ctx: Ctx, raw: Buffer, env: InboundEnvelope, size: number): { id: string } {
  const id = newId('rep', ctx.now());
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
  insertInboundReport(ctx.db, {
    id,
    kind: 'postmaster',
    outcome: 'ignored',
    team_id: null,
    email_seq: null,
    email_id: null,
    matched_by: null,
    report_message_id: null,
    mail_from: env.mailFrom,
    rcpt_to: env.rcptTo.join(','),
    remote_ip: env.remoteIp,
    parsed_json: JSON.stringify(parsed),
    raw_size: size,
    raw: raw.subarray(0, RAW_CAP),
    raw_truncated: size > RAW_CAP ? 1 : 0,
    created_at: ctx.now(),
  });
  ctx.log.info({ report: id, rcpt: env.rcptTo, from: env.mailFrom }, 'mail to postmaster kept for the operator');
  return { id };
}
