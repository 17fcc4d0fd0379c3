// Reads RFC 3464 message/delivery-status fields into per-recipient records, and finds the
// SMTP command / diagnostic a human-readable notice gives for one recipient. Pure functions.
import { findAddress } from '../core/address.js';
import { type Entity, decodeWords, header } from './mime.js';
import { DSN_FIELD_REASONS, QUOTED_REPLY_DECODER } from '../core/providers/index.js';
import { findReply, findStatus } from '../core/classify.js';

export interface RawRecipient {
  address: string | null;
  status: string | null;
  action: string | null;
  diagnostic: string | null;
  spec: string | null;
  replycode: string | null;
  command: string | null;
  reason?: string | null;
  /** Remote-MTA host name, when the report gives one */
  rhost?: string | null;
  /** Reporting-MTA host name (the MTA that wrote the report), when the report gives one */
  lhost?: string | null;
  /** Original-Recipient (RFC 3464): the address as we sent it, before an alias or forward rewrote it */
  original?: string | null;
  /** the notice's own words ahead of its delivery-status part, when it names this recipient alone */
  lead?: string | null;
  /** the lead is read by the local-agent tables only (Sisimai's RFC 3464 decoder reads no notice text) */
  leadForAgents?: boolean;
  /** the remote server's replies in a Sendmail transcript ("<<< ..." lines), when it names this recipient alone */
  replies?: string | null;
  /** which Sisimai decoder reads the notice: a notice format's family, `vendor` (GENERIC_LHOST_SIGNS) or `generic` */
  decoder?: string | null;
}

/** A failed recipient as a text-only notice gives it: no status, spec or reply code (the rest as given). */
export function failedRecipient(
  address: string | null,
  diagnostic: string | null = null,
  command: string | null = null,
): RawRecipient {
  return { address, status: null, action: 'failed', diagnostic, spec: null, replycode: null, command };
}

export interface DsnFields {
  perMessage: Map<string, string>;
  recipients: Map<string, string>[];
}

/**
 * "name <sep> value" (what /^([\w-]+)\s*<sep>\s*(.*)$/ read, without its quadratic backtracking): the name and
 * the value with leading white space removed; null when the value holds a line break.
 */
function fieldOf(line: string, sep: ':' | ';'): [string, string] | null {
  const m = (sep === ':' ? /^([\w-]+)\s*:/ : /^([\w-]+)\s*;/).exec(line);
  if (!m) return null;
  const value = line.slice(m[0].length).trimStart();
  return /[\n\r\u2028\u2029]/.test(value) ? null : [m[1] as string, value];
}

const RCPT_KEYS = ['final-recipient', 'original-recipient', 'x-actual-recipient'];
/** Per-message fields of RFC 3464 (never a recipient's, wherever they stand). */
const PER_MESSAGE_KEYS = new Set([
  'reporting-mta',
  'received-from-mta',
  'arrival-date',
  'original-envelope-id',
  'dsn-gateway',
]);

/** Splits delivery-status text into per-message and per-recipient field maps. */
export function readDsnFields(text: string): DsnFields {
  const lines = text
    .replace(/\r/g, '')
    .replace(/\n[ \t]+/g, ' ')
    .split('\n');
  const perMessage = new Map<string, string>();
  const recipients: Map<string, string>[] = [];
  let cur: Map<string, string> | null = null;
  // fields of the current paragraph read before its first recipient field (some MTAs write Diagnostic-Code and
  // Status before Final-Recipient): they belong to that recipient, unless the paragraph names none
  let pending: [string, string][] = [];
  const flush = () => {
    for (const [k, v] of pending) if (!perMessage.has(k)) perMessage.set(k, v);
    pending = [];
  };
  for (const line of lines) {
    if (!line.trim()) {
      flush();
      cur = null;
      continue;
    }
    const m = fieldOf(line, ':');
    if (!m) continue;
    const key = m[0].toLowerCase();
    const value = m[1].trim();
    if (
      RCPT_KEYS.includes(key) &&
      (!cur || cur.has(key) || (key !== 'final-recipient' && cur.has('diagnostic-code')))
    ) {
      cur = new Map(pending.filter(([k]) => !PER_MESSAGE_KEYS.has(k)));
      pending = pending.filter(([k]) => PER_MESSAGE_KEYS.has(k));
      flush();
      recipients.push(cur);
    }
    if (cur) {
      if (!cur.has(key)) cur.set(key, value);
    } else pending.push([key, value]);
  }
  flush();
  const withRecipient = recipients.filter((r) => RCPT_KEYS.some((k) => r.has(k)));
  return { perMessage, recipients: withRecipient };
}

/** Turns one recipient field map into a raw recipient. */
/**
 * "Final-Recipient: rfc822;user@host" with a one-label domain (a local host name): Sisimai keeps the address as
 * written, where the reader's address finder wants a dotted domain.
 */
function singleLabel(v: string | null | undefined): string | null {
  const m = /^\s*rfc822\s*;\s*<?([^\s@<>;]{1,64}@[A-Za-z0-9-]{1,63})>?\s*$/i.exec(v ?? '');
  return m ? (m[1] as string) : null;
}

export function dsnRecipient(f: Map<string, string>): RawRecipient {
  const address =
    findAddress(f.get('final-recipient')) ??
    findAddress(f.get('original-recipient')) ??
    findAddress(f.get('x-actual-recipient')) ??
    singleLabel(f.get('final-recipient'));
  // some MTAs put RFC 2047 encoded words in the diagnostic (a non-ASCII reply text)
  const diag = decodeWords(f.get('diagnostic-code') ?? '') || null;
  const dm = diag ? fieldOf(diag, ';') : null;
  const status = /[245]\.\d{1,3}\.\d{1,3}/.exec(f.get('status') ?? '')?.[0] ?? null;
  // "Status: 5.2.1 (mailbox disabled, not accepting messages)": go-sisimai reads the comment as part of the error text,
  // Sisimai 5.1.0 never does ("Status: 4.0.0 (host name lookup failure)" with Action: delayed is expired there); the
  // reader follows it except in a PowerMTA DSN (X-PowerMTA-* fields), whose comments go-sisimai's labels rest on
  const comment = powerMta(f) ? / \(([^()]+)\)\s*$/.exec(f.get('status') ?? '')?.[1] : undefined;
  const text = dm ? dm[1] : diag;
  return {
    address,
    status,
    action: normaliseAction(f.get('action')),
    diagnostic: comment ? `${text ?? ''} ${comment}`.trim() : text,
    spec: dm ? dm[0].toUpperCase() : null,
    replycode: null,
    command: null,
    rhost: dnsHost(f.get('remote-mta')),
    original: findAddress(f.get('original-recipient')),
    reason: fieldReason(f),
  };
}

/** Whether a recipient's fields are PowerMTA's (it writes X-PowerMTA-BounceCategory beside each recipient). */
function powerMta(f: Map<string, string>): boolean {
  for (const k of f.keys()) if (k.startsWith('x-powermta-')) return true;
  return false;
}

/** The host name of a "dns; host.name" field (Remote-MTA, Reporting-MTA), lower-case, or null. */
export function dnsHost(value: string | undefined): string | null {
  return /^\s*dns\s*;\s*\[?([\w.-]+\.[a-z]{2,})/i.exec(value ?? '')?.[1]?.toLowerCase() ?? null;
}

/** The reason a vendor's DSN field names (DSN_FIELD_REASONS), if any. */
function fieldReason(f: Map<string, string>): string | null {
  for (const [name, values] of Object.entries(DSN_FIELD_REASONS)) {
    const v = f.get(name)?.trim().toLowerCase();
    if (v && values[v]) return values[v];
  }
  return null;
}

export function normaliseAction(a: string | null | undefined): RawRecipient['action'] {
  const v = (a ?? '').toLowerCase().trim();
  if (!v) return null;
  if (v.startsWith('fail') || v === 'failure') return 'failed';
  if (v.startsWith('delay')) return 'delayed';
  if (v.startsWith('deliver')) return 'delivered';
  if (v.startsWith('relay')) return 'relayed';
  if (v.startsWith('expand')) return 'expanded';
  return null;
}

const COMMAND_PATTERNS: readonly [RegExp, string][] = [
  [/in reply to (?:the )?rcpt to/i, 'RCPT'],
  [/in reply to (?:the )?mail from/i, 'MAIL'],
  [/in reply to (?:end of )?data/i, 'DATA'],
  [/in reply to (?:the )?(?:helo|ehlo)/i, 'EHLO'],
  [/after rcpt to/i, 'RCPT'],
  [/after mail from/i, 'MAIL'],
  [/after (?:end of )?data/i, 'DATA'],
  [/after initial connection/i, 'CONN'],
  [/server after (?:ehlo|helo)\b/i, 'EHLO'],
  [/>>> rcpt to/i, 'RCPT'],
  [/>>> mail from/i, 'MAIL'],
  [/>>> data/i, 'DATA'],
  [/>>> (?:helo|ehlo)/i, 'EHLO'],
  [/but my name was rejected/i, 'EHLO'],
  [/but sender was rejected/i, 'MAIL'],
  // qmail-remote.c: "<host> does not like recipient.", "Connected to <host> but greeting failed.", DATA failures
  [/ does not like recipient\./i, 'RCPT'],
  [/ but greeting failed\./i, 'CONN'],
  [/ failed on DATA command| failed after I sent the message/i, 'DATA'],
  [/but the remote host rejected/i, 'RCPT'],
  [/did not like our rcpt to/i, 'RCPT'],
  [/did not like our (?:final )?data/i, 'DATA'],
  [/did not like our mail from/i, 'MAIL'],
  [/\[rcpt_to\]/i, 'RCPT'],
  [/\[mail_from\]/i, 'MAIL'],
  // Exim "… after RCPT TO:<…>", 1&1 "SMTP error from remote server for RCPT TO command, host: …"
  [/smtp error from remote (?:mail )?server (?:after|for) rcpt/i, 'RCPT'],
  [/smtp error from remote (?:mail )?server for mail from command/i, 'MAIL'],
  [/smtp error from remote (?:mail )?server for data command/i, 'DATA'],
  // qmail: "Sorry, no SMTP connection got far enough; most progress was RCPT TO response"
  [/most progress was rcpt to response/i, 'RCPT'],
  [/most progress was mail from response/i, 'MAIL'],
  [/\bfor rcpt to response\b/i, 'RCPT'],
  // X3 "SMTP:RCPT host ...", X6 "(Error following RCPT command)", m-FILTER "-------SMTP command" section
  [/\bSMTP:RCPT\b/, 'RCPT'],
  [/\bSMTP:MAIL\b/, 'MAIL'],
  [/\bSMTP:DATA\b/, 'DATA'],
  [/error following rcpt command/i, 'RCPT'],
  [/error following mail command/i, 'MAIL'],
  [/error following data command/i, 'DATA'],
  [/-------SMTP command\s+RCPT\b/i, 'RCPT'],
  [/-------SMTP command\s+MAIL\b/i, 'MAIL'],
  [/-------SMTP command\s+DATA\b/i, 'DATA'],
  // Postfix: "host mx.example[192.0.2.1] refused to talk to me: 421 ..." — the greeting (Sisimai reads it as HELO)
  [/refused to\s+talk to me:/i, 'HELO'],
];

export function commandIn(text: string): string | null {
  const flat = text.replace(/\s+/g, ' ');
  for (const [re, cmd] of COMMAND_PATTERNS) if (re.test(flat)) return cmd;
  return null;
}

/** Longest text paragraphFor returns (its paragraphs may overlap, so uncapped it grows with the square of the input). */
export const PARAGRAPH_CAP = 4 * 1024;

/** A line that holds nothing but the address (quoted or in angle brackets). */
function bareAddress(line: string, lower: string): boolean {
  return /^[\s"'<>]*$/.test(line.toLowerCase().replace(lower, ''));
}

/** Lines of one paragraph (at most 8) next to line `i`, across the blank lines between them. */
const BLOCK_LINES = 8;
function blockBefore(lines: string[], i: number): string {
  let j = i - 1;
  while (j >= 0 && j > i - 4 && !(lines[j] as string).trim()) j--;
  const out: string[] = [];
  for (; j >= 0 && out.length < BLOCK_LINES && (lines[j] as string).trim(); j--) out.unshift(lines[j] as string);
  return out.join(' ');
}
function blockAfter(lines: string[], i: number): string {
  let j = i + 1;
  while (j < lines.length && j < i + 4 && !(lines[j] as string).trim()) j++;
  const out: string[] = [];
  for (; j < lines.length && out.length < BLOCK_LINES && (lines[j] as string).trim(); j++) out.push(lines[j] as string);
  return out.join(' ');
}

/** The paragraph of a human-readable notice about `address` (from its line to a blank line). */
export function paragraphFor(text: string, address: string, others: string[]): string | null {
  const lines = text.replace(/\r/g, '').split('\n');
  const lower = address.toLowerCase();
  const chunks: string[] = [];
  let size = 0;
  for (let i = 0; i < lines.length && size <= PARAGRAPH_CAP; i++) {
    if (!(lines[i] as string).toLowerCase().includes(lower)) continue;
    const out = [lines[i] as string];
    for (let j = i + 1; j < lines.length; j++) {
      const l = lines[j] as string;
      if (!l.trim()) break;
      if (others.some((o) => o !== lower && l.trim().toLowerCase().replace(/^[<"]/, '').startsWith(o))) break;
      out.push(l);
      size += l.length + 1;
      if (size > PARAGRAPH_CAP) break;
    }
    size += (lines[i] as string).length + 1;
    if (out.length === 1 && bareAddress(lines[i] as string, lower)) {
      // "Delivery of email to this address\n\n  "a@b"\n\nhas failed due to ...": the address stands alone between
      // the sentence's halves; the paragraphs on either side are its text
      const around = [blockBefore(lines, i), out[0] as string, blockAfter(lines, i)].filter(Boolean).join(' ');
      size += around.length;
      chunks.push(around);
      continue;
    }
    chunks.push(out.join(' '));
  }
  return chunks.length ? chunks.join(' ').slice(0, PARAGRAPH_CAP) : null;
}

/**
 * Sisimai's RFC 3464 decoder (no vendor decoder took the notice) reads error text only from where its reading starts:
 * `text` is the human-readable text it reads (bounce-report.ts rfc3464Text: from a report's opening line, else after
 * the delivery-status part), and there only the lines that start flush left (not with a space, a tab or "X") and hold
 * an SMTP reply code or an "<a@b>" address. A `Status:` field that holds a reply instead of a status code is the
 * diagnostic.
 */
export function rfc3464ErrorLines(statusText: string | null, text: string | null): string | null {
  // "Status: 553 Exceeded maximum inbound message size" (a reply where the status code belongs) replaces them
  const status = /^Status:[ \t]*([245]\d\d\b[^\n]*)$/im.exec(statusText?.slice(0, 16384) ?? '')?.[1];
  if (status && findReply(status.slice(0, 3))) return status.trim();
  if (!text) return null;
  const lines = text
    .slice(0, 16384)
    .split(/\r?\n/)
    .filter((l) => l && !/^[ \tX]/.test(l) && (findReply(l) || /<[^<>@\s]*@[^<>\s]*>/.test(l)));
  return lines.length ? lines.join(' ') : null;
}

/** The recipient's paragraph without its address, when it holds the Diagnostic-Code's text (spaces squeezed). */
export function ownErrorLines(diag: string, para: string, address: string): string {
  const own = para.split(address).join(' ').replace(/\s+/g, ' ').trim();
  const d = diag.replace(/\s+/g, ' ').trim();
  return own.length > d.length && own.toLowerCase().includes(d.toLowerCase()) ? own : diag;
}

/**
 * Postfix (go-sisimai): the notice's own line "<rcpt>: host X said: 550 5.7.1 Access denied (in reply to MAIL FROM
 * command)" replaces a Diagnostic-Code it contains when it gives a detailed status (if the Status does not) or reply
 * code, so its "(in reply to ...)" tail is read with the reply.
 */
export function fullerReply(diag: string, para: string, status: string | null): string {
  const d = diag.replace(/\s+/g, ' ').trim();
  const at = para.indexOf('>:');
  const p = (at >= 0 ? para.slice(at + 2) : para).replace(/\s+/g, ' ').trim();
  if (!/\(in reply to /i.test(p) || p.length <= d.length || !p.includes(d)) return diag;
  const detail = (status && !status.endsWith('.0.0') ? null : findStatus(p)) ?? findReply(p);
  return detail && !/\.0\.0$|00$/.test(detail) ? p : diag;
}

/**
 * The status inside a quoted remote reply, as Sisimai's Amazon SES decoder reads it: the first status between the
 * first "-'" (else '-"') and the last "' " (else '" '), when both occur in that order; null when there is none.
 */
export function quotedReplyStatus(diag: string): string | null {
  const flat = diag.replace(/\s+/g, ' ');
  const open = flat.includes("-'") ? flat.indexOf("-'") : flat.indexOf('-"');
  const close = flat.includes("' ") ? flat.lastIndexOf("' ") : flat.lastIndexOf('" ');
  return open >= 0 && close > open + 2 ? findStatus(flat.slice(open + 2, close)) : null;
}

/** Whether Sisimai's Amazon SES decoder would read this notice (QUOTED_REPLY_DECODER). */
export function readsQuotedStatus(root: Entity): boolean {
  const d = QUOTED_REPLY_DECODER;
  if (d.notXMailer.test(header(root.headers, 'x-mailer') ?? '')) return false;
  return d.headers.some((h) => (header(root.headers, h) ?? '').trim() !== '');
}

/** A generic status (x.0.0, x.1.0) yields to the one inside the quoted remote reply of the diagnostic. */
export function quotedStatus(r: RawRecipient): string | null {
  if (!r.status || !r.diagnostic || !QUOTED_REPLY_DECODER.statuses.test(r.status)) return r.status;
  return quotedReplyStatus(r.diagnostic) ?? r.status;
}
