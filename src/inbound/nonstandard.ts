// Reads recipients and their error text from human-readable (non-RFC 3464) bounce notices:
// qmail, Exim, Postfix text, Sendmail transcripts, Exchange, Gmail, Zoho, OpenSMTPD, Yahoo...
import { ADDRESS_SOURCE, findAddress } from '../core/address.js';
import { type RawRecipient, commandIn, failedRecipient, paragraphFor } from './dsn.js';
import { FORMAT_RECIPIENT_LINES, type NoticeFormat } from './formats.js';
import { type Entity, decodeWords, header } from './mime.js';

/** Recipients read from one notice at most (an email has at most 50); bounds the per-recipient scans. */
export const MAX_NOTICE_RECIPIENTS = 100;

/** Lines that start the returned original message in common notice formats. */
export const ORIGINAL_MARKERS: readonly RegExp[] = [
  /^-+ ?This is a copy of the message/im,
  /^-+ ?Below this line is a copy of the message/im,
  /^-+ ?Original message -+/im,
  /^Original message headers:/im,
  /^Message headers follow\./im,
  /^[ \t]*-+ ?Unsent message follows -+/im,
  /^[ \t]*Below is a copy of the original message:/im,
  /^-+ ?The header of the original message is following/im,
  /^-+ ?Original message follows/im,
  /^[ \t]*-+ ?Original message -+/im,
  /^Content-Type: message\/rfc822/im,
  /^The original message was/im,
  /^-+\s*Forwarded message/im,
  /^[ \t]*Original message follows\.?[ \t]*$/im,
  /^Received: /m,
  // "The first 50 lines of your original message follow:" (a quoted copy, "> Received: ...")
  /^The first \d+ lines of (?:your|the) original message follow/im,
];

/** The error section of a notice: text before the copy of the original message (as its format marks it, if known). */
export function errorSection(text: string, format?: Pick<NoticeFormat, 'end' | 'endsOnly'> | null): string {
  let end = text.length;
  const markers = format?.endsOnly ? (format.end ?? []) : [...ORIGINAL_MARKERS, ...(format?.end ?? [])];
  for (const re of markers) {
    const m = re.exec(text);
    if (m && m.index > 0 && m.index < end) end = m.index;
  }
  return text.slice(0, end);
}

const ADDR_SRC = ADDRESS_SOURCE;
export const RECIPIENT_LINES: readonly RegExp[] = [
  new RegExp(`^\\s*<(${ADDR_SRC})>:?`, 'i'),
  new RegExp(`^\\s*(${ADDR_SRC})\\s*(?::|<mailto:|$| on | invalid address|\\.\\.\\.)`, 'i'),
  new RegExp(`^\\s*\\d{3} <(${ADDR_SRC})>\\.\\.\\.`, 'i'),
  new RegExp(`^\\s*Recipient address:\\s*<?(${ADDR_SRC})`, 'i'),
  new RegExp(`error delivering your mail to <(${ADDR_SRC})>`, 'i'),
  new RegExp(`^\\s*Original-Recipient:\\s*(?:rfc822;\\s*)?<?(${ADDR_SRC})`, 'i'),
  // Sendmail-like "permanent fatal errors" lists that quote the address after ">>>" (Active!hunter)
  new RegExp(`^\\s*>>>\\s*<?(${ADDR_SRC})>?(?:\\s+<[^>]+>)?\\s*$`, 'i'),
  // "Message details:" block of an Apache James notice
  new RegExp(`^\\s*RCPT TO:\\s*<?(${ADDR_SRC})>?\\s*$`, 'i'),
  // "<reason phrase of two or more words>: address" on its own line (IMail Server)
  new RegExp(`^[A-Za-z][\\w'-]*(?: [\\w'-]+){1,8}:\\s*<?(${ADDR_SRC})>?\\s*$`),
];

/** Local parts of a notice's own parties (postmaster, mailer-daemon ...), never a failed recipient's. */
export const SERVICE_LOCAL =
  /^(?:postmaster|mailer-daemon|mailer_daemon|mail-daemon|daemon|root|nobody|noreply|no-reply)@/i;

/** Sentences that name the sender, not a recipient (Exim deliver.c: "A message sent by\n\n  <sender>\n\ncould not be"). */
export const SENDER_LINES: readonly RegExp[] = [new RegExp(`^A message sent by\\s+<(${ADDR_SRC})>`, 'im')];

/** A Postfix recipient line at the left margin: "<address>: " and the reply or cause. */
const POSTFIX_RECIPIENT_HEAD = /^<[^<>\s@]+@[^<>\s]+>: \S/;

/** Addresses that the notice presents as failed recipients, in order of appearance. */
export function recipientLines(section: string, exclude: Set<string>, own?: readonly RegExp[]): string[] {
  const found: string[] = [];
  const patterns = own ?? [...RECIPIENT_LINES, ...FORMAT_RECIPIENT_LINES];
  let underRecipient = false;
  for (const line of section.split('\n')) {
    // Postfix's "<rcpt>: host X said: ..." at the left margin, its reply wrapped on indented lines below: an
    // indented "<address>:" there is part of the reply (Sisimai's Postfix decoder takes recipients at the margin)
    const indented = /^[ \t]/.test(line);
    if (indented && underRecipient) continue;
    underRecipient = indented ? underRecipient : POSTFIX_RECIPIENT_HEAD.test(line);
    if (!line.includes('@')) continue; // every pattern captures an address
    for (const re of patterns) {
      const a = findAddress(re.exec(line)?.[1]);
      if (a && !exclude.has(a) && !found.includes(a)) found.push(a);
      if (a) break;
    }
    if (found.length > MAX_NOTICE_RECIPIENTS) break;
  }
  return found;
}

/** Gmail "(state N)" → the SMTP command and the reason Gmail reports for it (null: read the reply text). */
const GMAIL_STATES: Record<string, [string, RawRecipient['reason']]> = {
  '6': ['MAIL', 'failedstarttls'], // go-sisimai (Sisimai 5.2+); userunknown before
  '9': ['HELO', 'blocked'],
  '12': ['MAIL', 'rejected'],
  '13': ['EHLO', null],
  '14': ['RCPT', 'userunknown'],
  '15': ['RCPT', 'filtered'],
  '17': ['DATA', 'filtered'],
  '18': ['DATA', 'filtered'],
};

/** Sendmail transcript: the ">>> CMD / <<< reply" lines just before this recipient's line. */
function transcriptFor(lines: string[], index: number): string {
  const out: string[] = [];
  for (let j = index - 1; j >= 0; j--) {
    const l = lines[j] as string;
    if (/^\s*\d{3} <[^>]+>\.\.\./.test(l) || /^While talking to/i.test(l)) break;
    if (/^\s*(?:>>>|<<<)/.test(l)) out.unshift(l.trim());
  }
  return out.join(' ');
}

function sendmailLine(section: string, address: string): { diag: string; ctx: string } | null {
  const lines = section.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*\d{3} <([^>]+)>\.\.\.(.*)$/.exec(lines[i] as string);
    if (m && (m[1] as string).toLowerCase() === address) {
      const ctx = transcriptFor(lines, i);
      return {
        diag: `${ctx.replace(/>>>[^<]*/g, '').replace(/<<<\s*/g, '')} ${(m[2] as string).trimStart()}`.trim(),
        ctx,
      };
    }
  }
  return null;
}

/**
 * qmail (Sisimai Lhost::qmail): a recipient's error is every line after its "<address>:" line, up to the next
 * recipient's; the notice's preamble before it (however an ISP worded it) is not, and nothing there is no cause.
 */
function linesAfter(section: string, address: string): string | null {
  const lines = section.split('\n');
  const at = lines.findIndex((l) => l.trimStart().toLowerCase().startsWith(`<${address}>:`));
  if (at < 0) return null;
  const next = lines.findIndex((l, i) => i > at && /^\s*<[^<>\s@]+@[^<>\s]+>:/.test(l));
  return lines.slice(at + 1, next < 0 ? lines.length : next).join('\n');
}

/**
 * Exim's "an undisclosed address\n    (generated from a@b)" (deliver.c: a redirect led to a hidden address) with no
 * error line under it: Sisimai's Exim decoder takes the "generated from" address as the recipient and gives no cause.
 */
function undisclosedOnly(paragraph: string): boolean {
  const left = paragraph.replace(/\ban undisclosed address\b/i, '').replace(/\(generated from [^()\n]*\)/i, '');
  return left !== paragraph && !left.trim();
}

function readOne(section: string, address: string, all: string[], ownLine?: boolean, after?: boolean): RawRecipient {
  const sm = sendmailLine(section, address);
  const own = after && all.length === 1 && !sm ? linesAfter(section, address) : null;
  if (own !== null) return readOwn(section, address, own);
  let diag = sm ? sm.diag : (paragraphFor(section, address, all) ?? '');
  const rest = diag
    .toLowerCase()
    .split(address)
    .join(' ')
    .replace(/[<>:\s]/g, '');
  const hasCode = /\b[245]\d\d\b|\b[245]\.\d{1,3}\.\d{1,3}\b/.test(diag);
  // a format read from its text alone says nothing more than its recipient's line: no cause given (undefined)
  // no cause under a hidden address: no diagnostic at all (a loose reading does not give it the notice's words)
  if (undisclosedOnly(diag)) return failedRecipient(address, null, null);
  if (ownLine && rest.length < 8) diag = '';
  else if (all.length === 1 && (rest.length < 8 || (!hasCode && !ownLine))) diag = section;
  if (/remote host said:/i.test(diag))
    diag = diag.replace(/I'm not going to try again; this message has been in the queue too long\./i, '');
  // a lone recipient's command may stand on a line of its own ("... did not like our RCPT TO:", DragonFly)
  const command = commandIn(sm ? sm.ctx : diag) ?? (all.length === 1 ? commandIn(section) : null);
  const rec = failedRecipient(address, squash(diag), command);
  const state = /\(state (\d+)\)/i.exec(diag)?.[1];
  const g = state ? GMAIL_STATES[state] : undefined;
  if (g) {
    rec.command = g[0];
    if (g[1]) rec.reason = g[1];
  }
  return rec;
}

const EXPANDED_FROM = /^[ \t]+\(expanded from:[ \t]*<?([^\s<>()@]+@[^\s<>()]+)>?\)[ \t]*$/i;

/**
 * Sendmail's text notice: an indented "(expanded from: <a@b>)" line in the block under a recipient's line names the
 * address the message was sent to (an alias expanded to the recipient). Sisimai's RFC 3464 text fallback takes that
 * line for the recipient's; the reader keeps both, the address sent to as the recipient's original recipient.
 */
function addExpandedFrom(section: string, raws: RawRecipient[]): void {
  const lines = section.split('\n');
  const lineOf = new Map<string, number>();
  lines.forEach((l, i) => {
    const key = l.trim().replace(/^<|>$/g, '').toLowerCase();
    if (key.includes('@') && !lineOf.has(key)) lineOf.set(key, i);
  });
  for (const r of raws) {
    const at = r.address ? lineOf.get(r.address.toLowerCase()) : undefined;
    if (at === undefined) continue;
    for (const line of lines.slice(at + 1, at + 8)) {
      if (!/^[ \t]/.test(line) || !line.trim()) break;
      const m = EXPANDED_FROM.exec(line);
      if (m) {
        r.original = findAddress(m[1]) ?? r.original;
        break;
      }
    }
  }
}

/** The first recipient's error: everything above the second recipient's line (Sisimai RFC 3464's text fallback). */
function withPreamble(first: RawRecipient, section: string, second: string): void {
  const lower = section.toLowerCase();
  const at = lower.indexOf(second);
  const cut = at < 0 ? -1 : lower.lastIndexOf('\n', at);
  if (cut > 0) first.diagnostic = squash(section.slice(0, cut));
}

function readOwn(section: string, address: string, diag: string): RawRecipient {
  return failedRecipient(address, squash(diag), commandIn(diag) ?? commandIn(section));
}

function squash(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** Recipients of a human-readable notice; `failed` comes from X-Failed-Recipients; `format` is the notice's format. */
export function readNotice(
  text: string,
  failed: string[],
  exclude: Set<string>,
  format?: Pick<NoticeFormat, 'end' | 'endsOnly' | 'recipientLines' | 'textOnly' | 'ownLine' | 'linesAfter'> | null,
  /** Sisimai's RFC 3464 text fallback reads it: the first of several recipients also gets the text above it */
  preamble = false,
): RawRecipient[] {
  const section = errorSection(text, format);
  const sender = SENDER_LINES.map((re) => findAddress(re.exec(section)?.[1])).filter((a): a is string => !!a);
  if (sender.length) exclude = new Set([...exclude, ...sender]);
  let addrs = recipientLines(section, exclude, format?.recipientLines);
  // the postmaster or mailer-daemon named beside a recipient is the notice's own party, never a failed recipient
  if (addrs.some((a) => !SERVICE_LOCAL.test(a))) addrs = addrs.filter((a) => !SERVICE_LOCAL.test(a));
  if (!addrs.length) addrs = failed;
  // A Postfix-style "<address>: host ... said" line names the recipient even when it equals the sender.
  if (!addrs.length) {
    const lines = section.split('\n').map((l) => l.trimStart().toLowerCase());
    addrs = recipientLines(section, new Set()).filter((a) => lines.some((l) => l.startsWith(`<${a}>:`)));
  }
  if (!addrs.length) return [];
  addrs = addrs.slice(0, MAX_NOTICE_RECIPIENTS);
  const raws = addrs.map((a) => readOne(section, a, addrs, format?.textOnly || format?.ownLine, format?.linesAfter));
  addExpandedFrom(section, raws);
  if (preamble && raws.length > 1) withPreamble(raws[0] as RawRecipient, section, addrs[1] as string);
  return raws;
}

/**
 * A notice of a format whose decoder starts reading at one of its `startLines` but that holds none (a provider's own
 * template behind an Exim): its X-Failed-Recipients with no cause (Sisimai Exim's fallback), or null to read it on.
 */
export function unstarted(
  format: Pick<NoticeFormat, 'startLines'> | null | undefined,
  notice: string,
  failed: string[],
): RawRecipient[] | null {
  if (!format?.startLines || !failed.length || format.startLines.test(notice.slice(0, 65536))) return null;
  return failed.slice(0, MAX_NOTICE_RECIPIENTS).map((address) => failedRecipient(address));
}

/** Postfix smtpd's notice to the postmaster about a failed session (smtpd_chat.c "SMTP server: errors from"). */
export const SMTPD_TRANSCRIPT_SUBJECT = /SMTP server: errors from /;

/**
 * The recipients of a Postfix smtpd transcript (" In:  RCPT TO:<a>" / " Out: 451 4.3.0 ..."): each RCPT TO address,
 * with the first reply of 400 or more as its error and the command it answered (go-sisimai Lhost::Postfix).
 */
export function readSmtpdTranscript(text: string): RawRecipient[] {
  const out: RawRecipient[] = [];
  let command: string | null = null;
  let error: { diag: string; command: string | null } | null = null;
  for (const line of text.slice(0, 65536).split('\n')) {
    const m = /^[ \t]*(In|Out):[ \t]/.exec(line);
    if (!m) continue;
    const rest = line.slice(m[0].length).trim();
    if (m[1] === 'In') {
      command = /^[A-Za-z]+/.exec(rest)?.[0]?.toUpperCase() ?? null;
      const address = command === 'RCPT' ? findAddress(rest) : null;
      if (address) out.push(failedRecipient(address));
    } else if (!error && /^[45]\d\d\b/.test(rest)) error = { diag: rest, command };
  }
  if (!error) return [];
  for (const r of out) {
    r.diagnostic = error.diag;
    r.command = error.command;
  }
  return out;
}

/** Whether a message with no report part reads as a bounce notice (its sender, subject, type or first lines). */
export function looksLikeBounce(root: Entity, notice: string): boolean {
  const from = (header(root.headers, 'from') ?? '').toLowerCase();
  const subject = decodeWords(header(root.headers, 'subject') ?? '').toLowerCase();
  return (
    /mailer-daemon|postmaster|mail delivery/.test(from) ||
    /undeliver|delivery (?:status|fail)|returned mail|failure notice|mail delivery failed|non[- ]?delivery/.test(
      subject,
    ) ||
    root.type === 'multipart/report' ||
    /could not be delivered|delivery(?:(?!delivery).)*failed/i.test(notice.slice(0, 2000)) ||
    (/^error message below:/im.test(notice) && /^[ \t]*RCPT TO:/im.test(notice))
  );
}

/** Notices that say they hold no report (Postfix bounce_notify_util.c): their recipient has no cause (undefined). */
const NO_REPORT: readonly RegExp[] = [/^[ \t]*--- Delivery report unavailable ---/im];

/** The one recipient of a notice that names none: its error section as the diagnostic (the address comes later). */
export function unnamed(notice: string): RawRecipient {
  const section = errorSection(notice);
  return failedRecipient(null, NO_REPORT.some((re) => re.test(section)) ? null : section.replace(/\s+/g, ' ').trim());
}
