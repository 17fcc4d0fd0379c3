// Reads a message a client submitted over SMTP without rebuilding it: its header fields (From and Sender read with
// the API's strict mailbox parser; To, Cc, Subject, Message-ID, Date), an outline of its attachments, and its final
// bytes (Bcc and Return-Path dropped, Message-ID and Date added if absent). Resent-* fields are refused.
import addressparser from 'nodemailer/lib/addressparser';
import libmime from 'libmime';
import { ApiError, invalid } from '../core/errors.js';
import type { Mailbox } from '../core/address.js';
import type { AttachmentInfo } from './attachments.js';
import { mailboxOf } from './email-input.js';

interface Field {
  name: string; // lower-case
  raw: string; // the whole field as received (latin1, folding kept, CRLF-terminated)
  value: string; // unfolded value, decoded as UTF-8
}
export interface SubmittedMessage {
  /** The From mailbox as `address` or `"Name" <address>` (the name decoded). */
  from: string;
  /** The Sender mailbox, or null. */
  sender: Mailbox | null;
  /** Addresses (lower-cased) the To and Cc headers name. */
  to: Set<string>;
  cc: Set<string>;
  subject: string;
  /** The client's Message-ID, or null. */
  messageId: string | null;
  attachments: AttachmentInfo[];
  /** The message to store: Bcc and Return-Path removed; Message-ID `<id@hostname>` and Date added when absent. */
  build(emailId: string, hostname: string, now: number): Buffer;
}

const MAX_PARTS = 200;
const MAX_DEPTH = 8;

/** CRLF line ends throughout (bare LF or CR become CRLF): what DKIM signing and SMTP need. */
function crlf(raw: Buffer): Buffer {
  if (!/\r(?!\n)|(?<!\r)\n/.test(raw.toString('latin1'))) return raw;
  return Buffer.from(raw.toString('latin1').replace(/\r\n|\r|\n/g, '\r\n'), 'latin1');
}

/** Header fields and the offset of the body (after the blank line). */
function readHeader(msg: Buffer): { fields: Field[]; bodyAt: number } {
  const end = msg.indexOf('\r\n\r\n');
  const head = msg.subarray(0, end < 0 ? msg.length : end + 2).toString('latin1');
  const fields: Field[] = [];
  for (const line of head.split(/(?<=\r\n)/)) {
    if (/^[ \t]/.test(line) && fields.length) {
      const f = fields[fields.length - 1];
      f.raw += line;
      f.value += line.replace(/\r\n$/, '');
      continue;
    }
    const m = /^([!-9;-~]+)[ \t]*:/.exec(line);
    if (!m) continue; // not a header field: dropped
    fields.push({ name: m[1].toLowerCase(), raw: line, value: line.slice(m[0].length).replace(/\r\n$/, '') });
  }
  for (const f of fields) f.value = Buffer.from(f.value, 'latin1').toString('utf8').trim();
  return { fields, bodyAt: end < 0 ? msg.length : end + 4 };
}

const all = (fields: Field[], name: string) => fields.filter((f) => f.name === name);

function addresses(fields: Field[], name: string): Set<string> {
  const out = new Set<string>();
  const add = (list: ReturnType<typeof addressparser>) => {
    for (const a of list) {
      if ('group' in a && a.group) add(a.group);
      else if (a.address) out.add(a.address.toLowerCase());
    }
  };
  for (const f of all(fields, name)) add(addressparser(f.value));
  return out;
}

/**
 * The mailbox of the one `name` header (From, Sender), read with the API's strict parser (services/email-input
 * mailboxOf): what a strict reader shows is what is validated. Repeated, a group, a second mailbox or an unquoted
 * `<>@,;:` in the display name are refused (invalid_address); none is refused unless `optional`.
 */
function mailboxField(fields: Field[], name: 'From' | 'Sender', optional: boolean): Mailbox | null {
  const list = all(fields, name.toLowerCase());
  if (list.length === 0 && optional) return null;
  if (list.length !== 1)
    throw invalid(
      name.toLowerCase(),
      `The message has ${list.length} ${name} headers; it must have ${optional ? 'at most' : 'exactly'} one, naming one mailbox.`,
      list.length ? 'invalid_address' : 'invalid_parameter',
    );
  const mb = mailboxOf(list[0].value, name.toLowerCase(), `The ${name} header`);
  const decoded = libmime
    .decodeWords(mb.name ?? '')
    .replace(/[\r\n]+/g, ' ')
    .trim();
  return { ...mb, name: decoded || null };
}

/** A mailbox as `address` or `"Name" <address>`. */
const written = (mb: Mailbox) => (mb.name ? `"${mb.name.replace(/["\\]/g, '\\$&')}" <${mb.address}>` : mb.address);

/** Resent-* fields would attribute the message to another sender: refused (550 5.7.1). */
function refuseResent(fields: Field[]): void {
  const resent = fields.find((f) => f.name.startsWith('resent-'));
  if (resent)
    throw new ApiError(
      'validation_error',
      'header_not_allowed',
      `The message carries a ${resent.raw.slice(0, resent.raw.indexOf(':'))} header; Resent-* fields are not accepted.`,
      'headers',
    );
}

function headerMap(fields: Field[]): Map<string, string> {
  const m = new Map<string, string>();
  for (const f of fields) if (!m.has(f.name)) m.set(f.name, f.value);
  return m;
}

/** Decoded size of a part body: base64 counted from its characters, anything else as is. */
function decodedSize(body: Buffer, cte: string): number {
  if (cte.trim().toLowerCase() !== 'base64') return body.length;
  const s = body.toString('latin1').replace(/[^A-Za-z0-9+/]/g, '');
  return Math.floor((s.length * 3) / 4);
}

/** The parts of a multipart body between `--boundary` lines (preamble and epilogue dropped). */
function splitParts(body: Buffer, boundary: string): Buffer[] {
  const delim = Buffer.from(`\r\n--${boundary}`, 'latin1');
  const src = Buffer.concat([Buffer.from('\r\n'), body]);
  const parts: Buffer[] = [];
  let at = src.indexOf(delim);
  while (at >= 0 && parts.length < MAX_PARTS) {
    const start = at + delim.length;
    if (src.subarray(start, start + 2).toString() === '--') break;
    const lineEnd = src.indexOf('\r\n', start);
    if (lineEnd < 0) break;
    const next = src.indexOf(delim, lineEnd);
    parts.push(src.subarray(lineEnd + 2, next < 0 ? src.length : next));
    at = next;
  }
  return parts;
}

/** Appends the attachments (parts with a file name or `attachment` disposition) of an entity to `out`. */
function outline(entity: Buffer, depth: number, out: AttachmentInfo[]): void {
  const { fields, bodyAt } = readHeader(entity);
  const h = headerMap(fields);
  const body = entity.subarray(bodyAt);
  const ct = libmime.parseHeaderValue(h.get('content-type') ?? 'text/plain');
  const type = (ct.value || 'text/plain').toLowerCase();
  if (type.startsWith('multipart/')) {
    if (ct.params.boundary && depth < MAX_DEPTH)
      for (const p of splitParts(body, ct.params.boundary)) if (out.length < MAX_PARTS) outline(p, depth + 1, out);
    return;
  }
  const disp = libmime.parseHeaderValue(h.get('content-disposition') ?? '');
  const filename = disp.params.filename ?? ct.params.name;
  if (disp.value.toLowerCase() !== 'attachment' && !filename) return;
  out.push({
    filename: libmime.decodeWords(filename ?? 'attachment'),
    content_type: type,
    size: decodedSize(body, h.get('content-transfer-encoding') ?? ''),
  });
}

/** Reads a submitted message; throws a validation ApiError when it has no single From mailbox. */
export function readSubmitted(raw: Buffer): SubmittedMessage {
  const msg = crlf(raw);
  const { fields, bodyAt } = readHeader(msg);
  refuseResent(fields);
  const from = written(mailboxField(fields, 'From', false)!);
  const sender = mailboxField(fields, 'Sender', true);
  const subject = libmime
    .decodeWords(all(fields, 'subject')[0]?.value ?? '')
    .replace(/[\r\n]+/g, ' ')
    .slice(0, 998);
  const messageId = all(fields, 'message-id')[0]?.value.slice(0, 998) || null;
  const attachments: AttachmentInfo[] = [];
  outline(msg, 0, attachments);
  return {
    from,
    sender,
    to: addresses(fields, 'to'),
    cc: addresses(fields, 'cc'),
    subject,
    messageId,
    attachments,
    build(emailId, hostname, now) {
      const kept = fields
        .filter((f) => f.name !== 'bcc' && f.name !== 'return-path')
        .map((f) => (f.raw.endsWith('\r\n') ? f.raw : f.raw + '\r\n'));
      if (!messageId) kept.push(`Message-ID: <${emailId}@${hostname}>\r\n`);
      if (all(fields, 'date').length === 0)
        kept.push(`Date: ${new Date(now).toUTCString().replace('GMT', '+0000')}\r\n`);
      return Buffer.concat([Buffer.from(kept.join('') + '\r\n', 'latin1'), msg.subarray(bodyAt)]);
    },
  };
}
