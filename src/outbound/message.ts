// The message itself, pure and store-free (what the signing worker loads): MIME via nodemailer's MailComposer
// (Message-ID <em_…@hostname>, Date, cc, reply-to, headers, html/text, attachments, never bcc) and DKIM signing.
import MailComposer from 'nodemailer/lib/mail-composer';
import { pooledRandom } from '../core/ids.js';
import { parseMailbox } from '../core/address.js';
import type { EmailRow } from '../services/delivery.js';
import type { StoredAttachment } from '../services/email-content.js';
import { dkimSignature, type DkimKey } from './dkim.js';
import { buildSync, type MimeTree } from '../lib/mime-sync.js';

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
    // what MimeNode draws itself (8 random bytes per node, one system call each), from the id pool
    baseBoundary: pooledRandom(8).toString('hex'),
  });
  const root = composer.compile();
  return buildSync(root as unknown as MimeTree) ?? root.build();
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
