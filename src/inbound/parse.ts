// parseReport(raw): reads a DSN/NDR, an ARF complaint or an auto-reply into a Report (one entry per
// recipient, Sisimai-compatible reason/status/hard). Never throws on malformed input; no I/O.
import type { BounceReason } from '../core/bounce-reasons.js';
import { classifyBounce, findReply, findStatus } from '../core/classify.js';
import { isExplicit, pseudoStatus } from '../core/bounce-reasons.js';
import { mailboxProvider, registryAnswer } from '../core/providers/index.js';
import { type Entity, decodeWords, header, leaves, parseEntity } from './mime.js';
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
import { readComplaint } from './arf.js';
import { looseNotice } from './loose-recipients.js';
import { originalTo, readOriginal } from './original.js';
import type { OriginalInfo } from '../core/report.js';
import { readSesNotification } from './ses-json.js';
import { type NoticeFormat, detectFormat, formatReason, vendorFamily } from './formats.js';
import { lastPostfixEntry, shareLastEntry } from './postfix-reply.js';

import type { Action, Report, ReportRecipient } from '../core/report.js';

export type { Action, Report, ReportRecipient, ParsedReport } from '../core/report.js';

/**
 * Bytes of a message that are read (the rest is ignored): everything a report says comes first, and
 * no pattern ever scans more than this. Header values are cut to HEADER_VALUE_CAP (mime.ts).
 */
export const TEXT_CAP = 256 * 1024;

export async function parseReport(raw: Buffer | string): Promise<Report> {
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
  const text = bytes.subarray(0, TEXT_CAP).toString('latin1');
  const reports = mboxMessages(text).map(readOne);
  const first = reports.find((r) => r.recipients.length) ?? (reports[0] as Report);
  if (reports.length === 1) return first;
  // An mbox of several notices (Sisimai reads each message): one report with every message's recipients.
  return { kind: first.kind, recipients: reports.flatMap((r) => r.recipients), original: first.original };
}

function readOne(text: string): Report {
  const root = parseEntity(text);
  return complaintReport(root) ?? sesReport(root) ?? bounceReport(root) ?? vacationReport(root) ?? emptyReport(root);
}

/**
 * Splits an mbox ("From " separator lines before header blocks) into messages; anything else is one message.
 * Like Sisimai's Mail::Mbox, the separator need not follow a blank line (it may follow a closing MIME boundary).
 */
function mboxMessages(text: string): string[] {
  if (!text.startsWith('From ')) return [text];
  const starts = [...text.matchAll(/(?<=\n)From \S+ [^\n]*\d{4}\r?\n(?=[\w-]+:)/g)].map((m) => m.index as number);
  if (!starts.length) return [text];
  return [0, ...starts].map((at, i, all) => text.slice(at, all[i + 1] ?? text.length));
}

function complaintReport(root: Entity): Report | null {
  const c = readComplaint(root);
  if (!c) return null;
  const recipients = c.addresses.map((address): ReportRecipient => ({
    address,
    status: null,
    action: null,
    reason: 'feedback',
    hard: null,
    diagnostic: null,
    replycode: null,
    feedback_type: c.feedbackType,
  }));
  return { kind: 'arf', recipients, original: readOriginal(root) };
}

/** Amazon SES JSON event notification (bounce, delivery, complaint). */
function sesReport(root: Entity): Report | null {
  const ses = readSesNotification(root);
  if (!ses) return null;
  const original = readOriginal(root);
  if (ses.type === 'complaint') {
    const recipients = ses.recipients.map((r): ReportRecipient => ({
      address: r.address,
      status: null,
      action: null,
      reason: 'feedback',
      hard: null,
      diagnostic: null,
      replycode: null,
      feedback_type: ses.feedbackType ?? 'abuse',
    }));
    return { kind: 'arf', recipients, original };
  }
  return { kind: 'dsn', recipients: ses.recipients.map(toRecipient), original };
}

function isAutoReply(root: Entity): boolean {
  const h = root.headers;
  const auto = (header(h, 'auto-submitted') ?? '').toLowerCase();
  const subject = decodeWords(header(h, 'subject') ?? '').toLowerCase();
  const from = (header(h, 'from') ?? '').toLowerCase();
  if (/mailer-daemon|postmaster/.test(from)) return false;
  return (
    auto.startsWith('auto-replied') ||
    !!header(h, 'x-autoreply') ||
    !!header(h, 'x-autorespond') ||
    (header(h, 'precedence') ?? '').toLowerCase() === 'auto_reply' ||
    /^(?:auto(?:matic)? ?reply|out of (?:the )?office|away|vacation|abwesend|auto:)/.test(subject)
  );
}

function vacationReport(root: Entity): Report | null {
  if (!isAutoReply(root)) return null;
  const address = findAddress(header(root.headers, 'from'));
  return {
    kind: 'other',
    recipients: [
      { address, status: null, action: null, reason: 'vacation', hard: null, diagnostic: null, replycode: null },
    ],
    original: readOriginal(root),
  };
}

function emptyReport(root: Entity): Report {
  return { kind: 'other', recipients: [], original: readOriginal(root) };
}

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
  const own = generic ? rfc3464ErrorLines(part?.text ?? null, textAfter(root, part)) : null;
  list.forEach((r, i) => {
    if (!r.address || !readText) return;
    // Sisimai's RFC 3464 decoder (no vendor decoder takes the notice) starts reading at the delivery-status part: the
    // text before it says nothing about the recipient there (its command, a fuller reply)
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
 * The text parts after the delivery-status part, up to the returned message: Sisimai's RFC 3464 decoder starts reading
 * at "Content-Type: message/delivery-status" of the flattened message, so a human-readable part before it is never
 * read, one after it is.
 */
function textAfter(root: Entity, part: Entity | null): string | null {
  const all = leaves(root);
  const at = part ? all.indexOf(part) : -1;
  if (at < 0) return null;
  const after = all.slice(at + 1);
  const end = after.findIndex((p) => p.type === 'message/rfc822' || p.type === 'text/rfc822-headers');
  const texts = (end < 0 ? after : after.slice(0, end)).filter((p) => p.type.startsWith('text/plain'));
  return texts.length ? texts.map((p) => p.text).join('\n') : null;
}

function senders(root: Entity, original: OriginalInfo): Set<string> {
  const s = new Set<string>();
  for (const v of [header(root.headers, 'to'), original.from, original.return_path]) {
    const a = findAddress(v);
    if (a) s.add(a);
  }
  return s;
}

function bounceReport(root: Entity): Report | null {
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
  if (!raws.length) {
    // a known notice format (FML's "You are not a member" has no other sign of a bounce) is read for recipients
    if (!failed.length && !format && !looksLikeBounce(root, notice)) return null;
    raws = SMTPD_TRANSCRIPT_SUBJECT.test(decodeWords(header(root.headers, 'subject') ?? ''))
      ? readSmtpdTranscript(notice)
      : (unstarted(format, notice, failed) ?? readNotice(notice, failed, senders(root, original), format, generic));
    if (!raws.length && !failed.length && !looksLikeBounce(root, notice)) return null;
    if (!raws.length) raws = looseNotice(notice, senders(root, original)) ?? [unnamed(notice)];
  }
  if (raws.length === 1 && !(raws[0] as RawRecipient).address) (raws[0] as RawRecipient).address = originalTo(root);
  applyFormat(format, root, raws, errorSection(notice, format));
  const decoder = format?.family ?? vendor ?? 'generic';
  for (const r of raws) r.decoder = decoder;
  return { kind: 'dsn', recipients: raws.map(toRecipient), original };
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

/**
 * What the provider registry decides for this recipient (its PRECEDENCE: the notice's own reason, the remote host's
 * table, provider codes, vendor phrases), or null; the generic reading (classifyBounce) does the rest.
 */
function presetReason(r: RawRecipient, diagnostic: string | null): { reason: BounceReason; source: string } | null {
  // codes are read from the text as given, phrases from the unfolded reply (unfoldReply)
  const text = diagnostic ?? '';
  const status = r.status && !r.status.endsWith('.0.0') ? r.status : (findStatus(text) ?? r.status);
  const said = withoutPostfixHost(text);
  return registryAnswer({
    text: unfoldReply(r.replies ? `${r.replies} ${said}` : said),
    status,
    replycode: r.replycode ?? findReply(text, status?.[0]),
    command: r.command,
    rhost: r.rhost ?? (said === text ? remoteHost(r, text) : null),
    destination: r.address?.split('@')[1] ?? null,
    lhost: r.lhost ?? null,
    notice: (r.reason as BounceReason | null | undefined) ?? null,
    lead: r.lead ?? null,
    decoder: r.decoder ?? 'generic',
  });
}

/** The text without Postfix's "host NAME[ADDR] said:" (Sisimai's Postfix decoder takes no remote host from it). */
function withoutPostfixHost(text: string): string {
  return text.replace(/\bhost\s+[\w.-]+\[[\w.:]*\]\s+said:/gi, 'said:');
}

/** The host that returned the reply: Remote-MTA, else the "host X [addr]" of the notice's text. */
function remoteHost(r: RawRecipient, text: string): string | null {
  return r.rhost ?? /\bhost\s+([\w-]+(?:\.[\w-]+)+)\s*\[/i.exec(text)?.[1] ?? null;
}

/**
 * A multi-line reply read as one text (go-sisimai): "550-5.2.1 a rate that 550-5.2.1 prevents" loses its repeated
 * "550-5.2.1" / "550 5.2.1" / "550-" prefixes, and starts with "550 5.2.1" again when the code is still in it.
 */
export function unfoldReply(text: string): string {
  const cs = findStatus(text);
  const cr = findReply(text, cs?.[0]);
  if (!cr || !text.includes(`${cr}-`)) return text;
  let out = text;
  for (const q of ['-', ' ']) {
    if (cs) out = out.split(`${cr}${q}${cs}`).join('');
    out = out.split(`${cr}${q}`).join('');
  }
  if (out.includes(cr)) out = `${cr} ${cs ?? ''} ${out}`;
  return out.replace(/\s+/g, ' ').trim();
}

function toRecipient(r: RawRecipient): ReportRecipient {
  const diagnostic = r.diagnostic ? r.diagnostic.replace(/\s+/g, ' ').trim() : null;
  const preset = presetReason(r, diagnostic);
  const reading = classifyBounce({
    status: r.status,
    replycode: r.replycode,
    diagnostic,
    // Sisimai::Fact reads a multi-line reply's phrases without its repeated "550-5.7.1" prefixes
    phrases: diagnostic ? unfoldReply(diagnostic) : null,
    command: r.command,
    action: r.action,
    spec: r.spec,
    reason: preset?.reason ?? null,
    // Sisimai::Fact keeps the remote host's table's answer as it is, a retry-class one too (Rhost->find || Reason->get)
    final: preset?.source === 'remote-host',
    context: r.leadForAgents ? null : r.lead,
  });
  // An explicit Action field wins: a Postfix expiry (Action: failed, Status: 4.4.7) is a final failure, not a delay.
  const action: Action =
    (r.action as Action) ?? (reading.reason === 'expired' ? 'delayed' : reading.status ? 'failed' : null);
  return {
    address: r.address,
    status: reading.status,
    action,
    reason: reading.reason,
    hard: reading.hard,
    diagnostic,
    replycode: reading.replycode,
    feedback_type: null,
    provider: mailboxProvider({
      rhost: remoteHost(r, diagnostic ?? ''),
      lhost: r.lhost,
      destination: r.address?.split('@')[1],
      text: diagnostic,
    }),
    ...(r.original && r.original !== r.address ? { original_recipient: r.original } : {}),
  };
}
