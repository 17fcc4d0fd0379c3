// Bounce notices: a DSN's delivery-status part or a notice's human-readable text, read with the notice format or
// vendor decoder that takes it (Sisimai's Lhost modules) into raw recipients, then read one by one. Pure.
import { findReply, findStatus } from '../core/classify.js';
import { isExplicit, pseudoStatus } from '../core/bounce-reasons.js';
import { type Entity, TEXT_CAP, decodeWords, header, leaves, parseEntity } from './mime.js';
import { findAddress } from '../core/address.js';
import {
  type RawRecipient,
  commandIn,
  dnsHost,
  dsnRecipient,
  paragraphFor,
  readDsnFields,
  rfc3464ErrorLines,
  ownErrorLines,
  fullerReply,
  readsQuotedStatus,
  quotedStatus,
} from './dsn.js';
import {
  readNotice,
  errorSection,
  MAX_NOTICE_RECIPIENTS,
  SMTPD_TRANSCRIPT_SUBJECT,
  readSmtpdTranscript,
  unstarted,
  looksLikeBounce,
  unnamed,
} from './nonstandard.js';
import { looseNotice } from './loose-recipients.js';
import { originalTo, readOriginal } from './original.js';
import type { OriginalInfo, Report } from '../core/report.js';
import { type NoticeFormat, detectFormat, formatReason, unformattedDecoder, vendorFamily } from './formats.js';
import { lastPostfixEntry, shareLastEntry } from './postfix-reply.js';
import { toRecipient } from './recipient-reading.js';
import { fallbackRecipients } from './rfc3464-fallback.js';

const nonEmpty = <T>(xs: T[]): T[] | null => (xs.length ? xs : null);

function noticeText(root: Entity): string {
  const texts = leaves(root).filter((p) => p.type.startsWith('text/plain') || (p.type === 'text/html' && false));
  if (texts.length)
    return texts
      .map((p) => p.text)
      .join('\n')
      .slice(0, TEXT_CAP);
  const html = leaves(root).find((p) => p.type === 'text/html');
  return (html ? html.text.replace(/<[^<>]+>/g, ' ') : root.text).slice(0, TEXT_CAP);
}

const isStatus = (p: Entity) => p.type === 'message/delivery-status' || p.type === 'message/global-delivery-status';

/** The delivery-status part; in a notice about a notice (X5) without one, that of the returned multipart/report. */
function statusPart(root: Entity): Entity | null {
  const own = leaves(root).find(isStatus);
  if (own) return own;
  const inner = leaves(root).find(
    (p) => p.type === 'message/rfc822' && /^content-type:[ \t]*multipart\/report/im.test(p.text.slice(0, 8192)),
  );
  return inner ? (leaves(parseEntity(inner.text)).find(isStatus) ?? null) : null;
}

/**
 * `readText`: a recipient's paragraph of the human-readable part is its diagnostic when the DSN gives none (a vendor
 * decoder's reading). `generic` (no vendor format took the notice: Sisimai's RFC 3464 decoder reads it): a missing
 * Diagnostic-Code is made of the text's own error lines (rfc3464ErrorLines), for the first recipient only.
 */
function dsnRecipients(
  root: Entity,
  notice: string,
  readText = true,
  generic = false,
  textHolds = false,
): RawRecipient[] {
  const part = statusPart(root);
  const source = part?.text ?? (/^Final-Recipient:/im.test(notice) ? notice : '');
  if (!source) return [];
  const { perMessage, recipients } = readDsnFields(source);
  const lhost = dnsHost(perMessage.get('reporting-mta'));
  const list = recipients
    .slice(0, MAX_NOTICE_RECIPIENTS)
    .map((f) => ({ ...dsnRecipient(f), lhost }))
    .filter((r) => r.address || r.status);
  const all = list.map((r) => r.address ?? '').filter(Boolean);
  const section = errorSection(notice);
  const own = generic ? rfc3464ErrorLines(part?.text ?? null, rfc3464Text(root, part)) : null;
  list.forEach((r, i) => {
    if (!r.address || !readText) return;
    // Sisimai's RFC 3464 decoder (no vendor decoder takes the notice) reads no recipient's paragraph in the text (its
    // command, a fuller reply): only its error lines (rfc3464Text)
    const para = generic ? null : paragraphFor(section, r.address, all);
    r.command = commandIn(para ?? '') ?? commandIn(r.diagnostic ?? '');
    if (!r.diagnostic && generic) r.diagnostic = i === 0 ? own : null;
    else if (!r.diagnostic && para) r.diagnostic = para;
    else if (para && textHolds) r.diagnostic = ownErrorLines(r.diagnostic as string, para, r.address);
    else if (para) r.diagnostic = fullerReply(r.diagnostic as string, para, r.status);
  });
  return list;
}

/**
 * Lines at which Sisimai's RFC 3464 decoder starts reading a notice's text (its `startingof` message lines, at a line's
 * start, case aside), besides the delivery-status part itself.
 */
const RFC3464_OPENINGS = [
  'content-type: message/disposition-notification',
  'content-type: message/xdelivery-status',
  'content-type: text/plain; charset=',
  'the original message was received at ',
  'this report relates to your message',
  'your message could not be delivered',
  'your message was not delivered to ',
];

/**
 * The human-readable text Sisimai's RFC 3464 decoder reads beside the delivery-status fields: it starts reading at the
 * first line of the flattened message that opens a report ("The original message was received at ...") or else at the
 * delivery-status part, and stops at the returned message. So a text part before the delivery-status part is read from
 * such a line on (a Sendmail-style report's transcript), one without such a line is not, one after it is.
 */
function rfc3464Text(root: Entity, part: Entity | null): string | null {
  const all = leaves(root);
  const at = part ? all.indexOf(part) : -1;
  if (at < 0) return null;
  const returned = (p: Entity) => p.type === 'message/rfc822' || p.type === 'text/rfc822-headers';
  const before = all.slice(0, at);
  const cut = before.findIndex(returned);
  const lines = (cut < 0 ? before : before.slice(0, cut))
    .filter((p) => p.type.startsWith('text/plain'))
    .flatMap((p) => p.text.split(/\r?\n/));
  const opening = lines.findIndex((l) => RFC3464_OPENINGS.some((o) => l.toLowerCase().startsWith(o)));
  const after = all.slice(at + 1);
  const end = after.findIndex(returned);
  const texts = [
    ...(opening < 0 ? [] : [lines.slice(opening + 1).join('\n')]),
    ...(end < 0 ? after : after.slice(0, end)).filter((p) => p.type.startsWith('text/plain')).map((p) => p.text),
  ];
  return texts.length ? texts.join('\n') : null;
}

function senders(root: Entity, original: OriginalInfo): Set<string> {
  const s = new Set<string>();
  for (const v of [header(root.headers, 'to'), original.from, original.return_path]) {
    const a = findAddress(v);
    if (a) s.add(a);
  }
  return s;
}
export function bounceReport(root: Entity): Report | null {
  const original = readOriginal(root);
  const notice = noticeText(root);
  const format = detectFormat(root, notice);
  const vendor = format ? null : vendorFamily(root, notice);
  const generic = !format && !vendor;
  let raws = format?.textOnly
    ? []
    : dsnRecipients(root, notice, !format?.statusOnly, generic, !!format?.textHoldsDiagnostic);
  if (vendor === 'Postfix') shareLastEntry(raws, lastPostfixEntry(errorSection(notice)));
  if (!format && readsQuotedStatus(root)) for (const r of raws) r.status = quotedStatus(r);
  if (raws.length === 1 && !format?.statusOnly) addContext(raws[0] as RawRecipient, root, notice);
  if (generic && raws.length === 1) (raws[0] as RawRecipient).leadForAgents = true;
  const failed = (header(root.headers, 'x-failed-recipients') ?? '')
    .split(',')
    .map((a) => findAddress(a))
    .filter((a): a is string => !!a);
  // Exim: "Final-Recipient: rfc822;/path/to/mailbox" (a file or pipe) — X-Failed-Recipients names the address.
  if (raws.length && raws.length === failed.length)
    raws.forEach((r, i) => {
      r.address ??= failed[i] ?? null;
    });
  if (failed.length) redirected(raws, notice, failed);
  if (!raws.length) {
    // a known notice format (FML's "You are not a member" has no other sign of a bounce) is read for recipients
    if (!failed.length && !format && !looksLikeBounce(root, notice)) return null;
    raws = SMTPD_TRANSCRIPT_SUBJECT.test(decodeWords(header(root.headers, 'subject') ?? ''))
      ? readSmtpdTranscript(notice)
      : (unstarted(format, notice, failed) ??
        (generic && !failed.length && !unformattedDecoder(root) ? nonEmpty(fallbackRecipients(notice)) : null) ??
        readNotice(notice, failed, senders(root, original), format, generic));
    if (!raws.length && !failed.length && !looksLikeBounce(root, notice)) return null;
    if (!raws.length) raws = looseNotice(notice, senders(root, original)) ?? [unnamed(notice)];
  }
  if (raws.length === 1 && !(raws[0] as RawRecipient).address) (raws[0] as RawRecipient).address = originalTo(root);
  applyFormat(format, root, raws, errorSection(notice, format));
  const decoder = format?.family ?? vendor ?? unformattedDecoder(root) ?? 'generic';
  for (const r of raws) r.decoder = decoder;
  return { kind: 'dsn', recipients: raws.map(toRecipient), original };
}

/** Exim's "(generated from c@d)" (or "ultimately generated from") under the address "a@b" that failed. */
const GENERATED = /^\((?:ultimately )?generated from ([^()\s]+)\)$/;

/**
 * Exim, a redirected address: its DSN's Final-Recipient names the address the message was sent to, the text and
 * X-Failed-Recipients the one it was redirected to, which failed. Sisimai's Exim decoder reads the text: the
 * recipient is the address that failed (only when X-Failed-Recipients names it too).
 */
function redirected(raws: RawRecipient[], notice: string, failed: readonly string[]): void {
  const failing = new Set(failed.map((a) => a.toLowerCase()));
  const lines = notice.split('\n').map((l) => l.trim());
  for (let i = 1; i < lines.length; i++) {
    const m = GENERATED.exec(lines[i] as string);
    const [to, from] = [/\s/.test(lines[i - 1] as string) ? null : findAddress(lines[i - 1]), m && findAddress(m[1])];
    if (!to || !from || !failing.has(to.toLowerCase())) continue;
    for (const r of raws) if (r.address?.toLowerCase() === from.toLowerCase()) r.address = to;
  }
}

const TRANSCRIPT = /^[ \t]*-+ Transcript of session follows/m;
const SENDMAIL_SUBJECT = /^Warning: |see transcript for details\s*$/;

/**
 * A DSN's lone recipient, read with the notice around it (go-sisimai): a Sendmail notice's transcript replies
 * ("<<< ...", with no ">>>" command: EHLO), else the human-readable text (a local agent's words, e.g. dovecot's or
 * procmail's) as its lead.
 */
function addContext(one: RawRecipient, root: Entity, notice: string): void {
  const subject = decodeWords(header(root.headers, 'subject') ?? '');
  if (TRANSCRIPT.test(notice) && SENDMAIL_SUBJECT.test(subject)) {
    one.replies = transcriptReplies(notice);
    // replies with no ">>> command" before them answered the greeting: the session ended at EHLO
    if (one.replies && !one.command && !/^>>> /m.test(notice)) one.command = 'EHLO';
  } else one.lead = notice.slice(0, 4096);
}

/**
 * The remote server's replies ("<<< 550-5.7.1 ...", each once) in a Sendmail transcript: go-sisimai reads them ahead
 * of a lone recipient's Diagnostic-Code, which often keeps only their first line.
 */
function transcriptReplies(notice: string): string | null {
  const lines = notice.slice(0, 16384).split('\n');
  const replies = [...new Set(lines.filter((l) => l.startsWith('<<< ')).map((l) => l.slice(4).trim()))];
  return replies.length ? replies.join(' ') : null;
}

/** A format's own tables (phrases, status codes, header rule) decide the reason before the generic reading. */
function applyFormat(format: NoticeFormat | null, root: Entity, raws: RawRecipient[], section: string): void {
  if (!format) return;
  for (const r of raws) {
    if (r.reason) continue;
    const nc = format.noCause;
    if (nc && nc.line.test((r.diagnostic ?? '').trimStart())) r.diagnostic = responseAfter(section, nc.response);
    const diag = r.diagnostic ?? '';
    const byCommand = r.command ? format.commands?.[r.command] : undefined;
    if (byCommand) {
      // Sisimai Exim: a bare reply code gets the pseudo status of the command's reason (MAIL → x.0.901),
      // kept even when the text later gives another reason.
      const reply = r.replycode ?? findReply(diag);
      if (!r.status && !findStatus(diag) && reply) r.status = pseudoStatus(byCommand, reply.startsWith('4'));
      if (isExplicit(byCommand)) r.reason = byCommand;
      continue;
    }
    const status = r.status && !r.status.endsWith('.0.0') ? r.status : (findStatus(diag) ?? r.status);
    const reason =
      formatReason(format, root, diag.replace(/\s+/g, ' '), status) ??
      (raws.length === 1 ? formatReason(format, root, section.replace(/\s+/g, ' '), null) : null);
    if (reason) r.reason = reason;
    // Exim: with neither a status nor a reply code, expiry and a full mailbox are temporary (4.0.947, 4.0.922).
    if (reason && !status && !(r.replycode ?? findReply(diag)) && format.temporaryWithoutCode?.includes(reason)) {
      r.status = pseudoStatus(reason, true);
    }
  }
}

/** The text from the line holding `marker` to the end of the error section (IMail's remote response), or null. */
function responseAfter(section: string, marker: string): string | null {
  const at = section.indexOf(marker);
  return at < 0 ? null : section.slice(at, at + 4096);
}
