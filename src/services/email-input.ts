// Checks a POST /emails body beyond its JSON shape: addresses, headers, recipient count, body presence,
// attachments, the size of the message as built, and scheduling. Returns the normalised input or throws a validation ApiError.
import { ApiError, invalid } from '../core/errors.js';
import { readMailbox, type Mailbox } from '../core/address.js';
import { checkAttachments, type AttachmentInput, type CheckedAttachments } from './attachments.js';

export interface EmailInput {
  from: string;
  to: string | string[];
  cc?: string[] | null;
  bcc?: string[] | null;
  reply_to?: string | null;
  subject: string;
  html?: string | null;
  text?: string | null;
  tags?: string[] | null;
  headers?: Record<string, string> | null;
  scheduled_at?: string | null;
  tracking?: { opens?: boolean; clicks?: boolean } | null;
  attachments?: AttachmentInput[] | null;
}
export interface Recipient {
  address: string;
  domain: string;
  kind: 'to' | 'cc' | 'bcc';
}
export interface CheckedEmail {
  input: EmailInput;
  from: Mailbox;
  /** The Sender header's mailbox, if any: for a live key its domain must be verified, like from's. */
  sender?: Mailbox | null;
  replyTo: string | null;
  to: string[];
  cc: string[] | null;
  bcc: string[] | null;
  recipients: Recipient[];
  scheduledAt: number | null;
  headers: Record<string, string> | null;
  attachments: CheckedAttachments;
}
/** `maxBytes`: MTA_MAX_MESSAGE_BYTES; `message`: the bytes of a submitted message (SMTP), which carries its own body. */
export interface CheckOptions {
  maxBytes: number;
  message?: Buffer;
}

export const MAX_RECIPIENTS = 50;
const MAX_SCHEDULE_MS = 30 * 24 * 3600 * 1000;
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'message-id',
  'dkim-signature',
  'return-path',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
]);
const HEADER_NAME = /^[!-9;-~]+$/; // printable ASCII except ':' (RFC 5322 ftext)

/**
 * One mailbox, parsed once (core/address readMailbox). Forms that could show one address and send to
 * another (unquoted specials in the display name, groups, a second mailbox) are `invalid_address`.
 */
export function mailboxOf(raw: string, param: string, label = param): Mailbox {
  const r = readMailbox(raw);
  if (r.ok) return r.mailbox;
  throw invalid(
    param,
    `${label} must be one address or "Name <address>": ${r.reason}.`,
    r.hostile ? 'invalid_address' : 'invalid_parameter',
  );
}

function addresses(list: string[], param: string, kind: Recipient['kind'], out: Recipient[]): string[] {
  return list.map((raw, i) => {
    const mb = mailboxOf(raw, param, `${param}[${i}]`);
    out.push({ address: mb.address, domain: mb.domain, kind });
    return raw.trim();
  });
}

/** Header names an address header must hold a valid mailbox for. */
const ADDRESS_HEADERS = new Set(['sender', 'reply-to']);

function checkHeaders(h: Record<string, string> | null | undefined): Record<string, string> | null {
  if (!h) return null;
  for (const [name, value] of Object.entries(h)) {
    if (ADDRESS_HEADERS.has(name.toLowerCase())) mailboxOf(value, 'headers', `Header ${JSON.stringify(name)}`);
    if (!HEADER_NAME.test(name) || /[\r\n]/.test(value))
      throw invalid(
        'headers',
        `Header ${JSON.stringify(name)} has a name or value that holds CR, LF or invalid characters.`,
      );
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      throw invalid('headers', `Header ${JSON.stringify(name)} is set by the service and cannot be given.`);
  }
  return h;
}

/** The mailbox of the one Sender header (checkHeaders parsed it), or null; two Sender headers are refused. */
function senderOf(h: Record<string, string> | null): Mailbox | null {
  const senders = h ? Object.keys(h).filter((n) => n.toLowerCase() === 'sender') : [];
  if (senders.length > 1) throw invalid('headers', 'Give at most one Sender header.', 'invalid_address');
  return senders.length ? mailboxOf(h![senders[0]], 'headers', 'Header "Sender"') : null;
}

function checkSchedule(s: string | null | undefined, now: number): number | null {
  if (s === undefined || s === null) return null;
  const t = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(s) ? Date.parse(s) : NaN;
  if (Number.isNaN(t))
    throw invalid(
      'scheduled_at',
      'scheduled_at must be an ISO 8601 date-time with a time zone, e.g. 2026-01-31T09:00:00Z.',
    );
  if (t > now + MAX_SCHEDULE_MS) throw invalid('scheduled_at', 'scheduled_at may be at most 30 days ahead.');
  return t <= now ? null : t;
}

/** 413 request_too_large when the message as built would exceed `max` bytes. */
export function checkSize(bytes: number, max: number): void {
  if (bytes > max)
    throw new ApiError(
      'validation_error',
      'request_too_large',
      `The message as built would be about ${bytes} bytes; the maximum is ${max} (MTA_MAX_MESSAGE_BYTES).`,
      undefined,
      413,
    );
}

/** Bytes of the built message: bodies, attachments (base64) and room for the headers. */
function builtSize(input: EmailInput, atts: CheckedAttachments): number {
  const body = Buffer.byteLength(input.html ?? '') + Buffer.byteLength(input.text ?? '');
  return Math.ceil(body * 1.05) + atts.builtBytes + 4096;
}

export function checkEmail(input: EmailInput, now: number, opts: CheckOptions): CheckedEmail {
  const from = mailboxOf(input.from, 'from');
  if (input.reply_to != null) mailboxOf(input.reply_to, 'reply_to');
  const replyHeader = Object.keys(input.headers ?? {}).find((n) => n.toLowerCase() === 'reply-to');
  if (replyHeader && input.reply_to != null)
    throw invalid('headers', 'Give the reply address either as reply_to or as a Reply-To header, not both.');
  const recipients: Recipient[] = [];
  const to = addresses(Array.isArray(input.to) ? input.to : [input.to], 'to', 'to', recipients);
  const cc = input.cc ? addresses(input.cc, 'cc', 'cc', recipients) : null;
  const bcc = input.bcc ? addresses(input.bcc, 'bcc', 'bcc', recipients) : null;
  if (recipients.length > MAX_RECIPIENTS)
    throw invalid('to', `At most ${MAX_RECIPIENTS} recipients across to, cc and bcc; got ${recipients.length}.`);
  if (!opts.message && !input.html && !input.text) throw invalid('html', 'Give html, text or both.', 'missing_body');
  const attachments = checkAttachments(input.attachments);
  checkSize(opts.message ? opts.message.length : builtSize(input, attachments), opts.maxBytes);
  const checked = checkHeaders(input.headers);
  const sender = senderOf(checked);
  // A Reply-To header is the reply_to field by another name: one place to keep it.
  const replyTo = replyHeader ? checked![replyHeader] : (input.reply_to ?? null);
  const headers =
    checked && replyHeader ? Object.fromEntries(Object.entries(checked).filter(([n]) => n !== replyHeader)) : checked;
  const scheduledAt = checkSchedule(input.scheduled_at, now);
  return {
    input,
    from,
    sender,
    replyTo,
    to,
    cc,
    bcc,
    recipients,
    scheduledAt,
    headers: headers && Object.keys(headers).length ? headers : null,
    attachments,
  };
}
