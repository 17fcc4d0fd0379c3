// Builds the message once per email: MIME via nodemailer's MailComposer (Message-ID <em_…@hostname>, Date, cc, reply-to,
// headers, html/text, attachments, never bcc), tracking applied; or an SMTP submission's stored message as is. DKIM-signed.
import MailComposer from 'nodemailer/lib/mail-composer';
import { parseMailbox } from '../core/address.js';
import type { EmailRow } from '../store/emails.js';
import type { Ctx } from '../services/context.js';
import { applyTracking } from '../services/tracking.js';
import { signingKeyFor } from '../services/sending-domain.js';
import { storedAttachments, storedMessage, type StoredAttachment } from '../services/email-content.js';
import { dkimSignature, type DkimKey } from './dkim.js';

/** A signed message ready to send, or why the service cannot send it (→ `failed`). */
export type Prepared =
  | { ok: true; raw: Buffer; returnDomain: string }
  | { ok: false; error: 'domain_not_verified' | 'compose_failed'; message: string };

interface Box {
  name: string;
  address: string;
}

/**
 * A stored address as the `{name, address}` object submission validated (the same strict parser), so
 * nodemailer never re-parses a string: the header that leaves names exactly the validated mailbox.
 */
function box(raw: string): Box {
  const m = parseMailbox(raw);
  if (!m) throw new Error('a stored address does not parse as one mailbox');
  return { name: m.name ?? '', address: m.address };
}
const boxes = (json: string | null): Box[] | undefined =>
  json === null ? undefined : (JSON.parse(json) as string[]).map(box);

/** Custom headers without Sender, which goes to MailComposer as a parsed mailbox too. */
function customHeaders(json: string | null): { headers?: Record<string, string>; sender?: Box } {
  if (!json) return {};
  const all = JSON.parse(json) as Record<string, string>;
  const senderKey = Object.keys(all).find((k) => k.toLowerCase() === 'sender');
  if (senderKey === undefined) return { headers: all };
  const { [senderKey]: sender, ...headers } = all;
  return { headers, sender: box(sender) };
}

/** The unsigned RFC 5322 message of an email (CRLF line ends). */
export async function composeMessage(ctx: Ctx, email: EmailRow): Promise<Buffer> {
  const message = storedMessage(ctx, email);
  if (message) return message;
  const html = email.html === null ? undefined : applyTracking(ctx, email, email.html);
  return composeRaw(email, html, ctx.config.hostname, storedAttachments(ctx, email));
}

/** An attachment as MailComposer takes it (bytes may arrive from a worker as a Uint8Array); a content_id makes it inline. */
function part(a: StoredAttachment) {
  const content = Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength);
  const inline = a.content_id === null ? {} : { cid: a.content_id, contentDisposition: 'inline' as const };
  return { filename: a.filename, content, contentType: a.content_type, ...inline };
}

/** The fields of an email the message is built from (what a signing worker receives). */
export type ComposeFields = Pick<
  EmailRow,
  | 'id'
  | 'from_addr'
  | 'to_json'
  | 'cc_json'
  | 'reply_to'
  | 'subject'
  | 'text'
  | 'headers_json'
  | 'scheduled_at'
  | 'created_at'
>;

/** The message from its fields and the (tracked) html: pure, no store access. */
export async function composeRaw(
  email: ComposeFields,
  html: string | undefined,
  hostname: string,
  attachments: StoredAttachment[] = [],
): Promise<Buffer> {
  const { headers, sender } = customHeaders(email.headers_json);
  const composer = new MailComposer({
    from: box(email.from_addr),
    sender,
    to: boxes(email.to_json),
    cc: boxes(email.cc_json),
    replyTo: email.reply_to === null ? undefined : box(email.reply_to),
    subject: email.subject,
    text: email.text ?? undefined,
    html,
    headers,
    attachments: attachments.length ? attachments.map(part) : undefined,
    messageId: `<${email.id}@${hostname}>`,
    date: new Date(email.scheduled_at ?? email.created_at),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}

export interface SignKeys {
  rsa: DkimKey;
  ed25519: DkimKey | null;
}
/** `message`: an SMTP submission's own bytes, signed as they are; else the message is composed from `fields`. */
export interface SignJob {
  fields: ComposeFields;
  html: string | undefined;
  hostname: string;
  keys: SignKeys;
  attachments?: StoredAttachment[];
  message?: Uint8Array;
}

/** Composes and DKIM-signs (each key once): the signed message. Pure apart from the signing; throws on a bad key. */
export async function composeAndSign(j: SignJob): Promise<Buffer> {
  const body = j.message
    ? Buffer.from(j.message.buffer, j.message.byteOffset, j.message.byteLength)
    : await composeRaw(j.fields, j.html, j.hostname, j.attachments);
  const ed = j.keys.ed25519;
  const [rsa, second] = await Promise.all([dkimSignature(body, j.keys.rsa), ed ? dkimSignature(body, ed) : '']);
  return Buffer.concat([Buffer.from(rsa + second), body]);
}

/** Runs a SignJob (in a worker thread when one is given, else here). */
export type Signer = (j: SignJob) => Promise<Buffer>;

/** Compose + sign with the sending domain's key; never throws. */
export async function prepareEmail(ctx: Ctx, email: EmailRow, signer: Signer = composeAndSign): Promise<Prepared> {
  const key = signingKeyFor(ctx, email.team_id, email.sender_domain);
  if (!key)
    return {
      ok: false,
      error: 'domain_not_verified',
      message: `The sending domain of ${email.sender_domain} is no longer verified.`,
    };
  try {
    const html = email.html === null ? undefined : applyTracking(ctx, email, email.html);
    const ed = key.ed25519;
    const keys: SignKeys = {
      rsa: { signingDomain: key.signingDomain, selector: key.selector, privateKey: key.privateKey },
      ed25519: ed ? { signingDomain: key.signingDomain, ...ed } : null,
    };
    const f = email;
    const fields: ComposeFields = {
      id: f.id,
      from_addr: f.from_addr,
      to_json: f.to_json,
      cc_json: f.cc_json,
      reply_to: f.reply_to,
      subject: f.subject,
      text: f.text,
      headers_json: f.headers_json,
      scheduled_at: f.scheduled_at,
      created_at: f.created_at,
    };
    const message = storedMessage(ctx, email) ?? undefined;
    const attachments = message ? [] : storedAttachments(ctx, email);
    const raw = await signer({ fields, html, hostname: ctx.config.hostname, keys, attachments, message });
    return { ok: true, raw, returnDomain: key.returnPath ?? ctx.config.bounceDomain };
  } catch (err) {
    ctx.log.error({ err: (err as Error).message, email: email.id }, 'could not compose or sign');
    return { ok: false, error: 'compose_failed', message: 'The message could not be built or signed.' };
  }
}
