// Builds the message once per email: MIME via nodemailer's MailComposer (Message-ID <em_…@hostname>, Date,
// cc, reply-to, headers, html/text, never bcc), tracking applied, DKIM-signed (rsa-sha256, + ed25519-sha256).
import MailComposer from 'nodemailer/lib/mail-composer';
import { parseMailbox } from '../core/address.js';
import type { EmailRow } from '../store/emails.js';
import type { Ctx } from '../services/context.js';
import { applyTracking } from '../services/tracking.js';
import { signingKeyFor } from '../services/sending-domain.js';
import { dkimSignature } from './dkim.js';

/** A signed message ready to send, or why the service cannot send it (→ `failed`). */
export type Prepared =
  | { ok: true; raw: Buffer; returnDomain: string }
  | { ok: false; error: 'domain_not_verified' | 'compose_failed'; message: string };

interface Box { name: string; address: string }

/**
 * A stored address as the `{name, address}` object submission validated (the same strict parser), so
 * nodemailer never re-parses a string: the header that leaves names exactly the validated mailbox.
 */
function box(raw: string): Box {
  const m = parseMailbox(raw);
  if (!m) throw new Error('a stored address does not parse as one mailbox');
  return { name: m.name ?? '', address: m.address };
}
const boxes = (json: string | null): Box[] | undefined => (json === null ? undefined : (JSON.parse(json) as string[]).map(box));

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
  const html = email.html === null ? undefined : applyTracking(ctx, email, email.html);
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
    messageId: `<${email.id}@${ctx.config.hostname}>`,
    date: new Date(email.scheduled_at ?? email.created_at),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}

/** Compose + sign with the sending domain's key; never throws. */
export async function prepareEmail(ctx: Ctx, email: EmailRow): Promise<Prepared> {
  const key = signingKeyFor(ctx, email.team_id, email.sender_domain);
  if (!key) return { ok: false, error: 'domain_not_verified', message: `The sending domain of ${email.sender_domain} is no longer verified.` };
  try {
    const body = await composeMessage(ctx, email);
    const ed = key.ed25519;
    const [rsa, second] = await Promise.all([dkimSignature(body, key), ed ? dkimSignature(body, { signingDomain: key.signingDomain, ...ed }) : '']);
    return { ok: true, raw: Buffer.concat([Buffer.from(rsa + second), body]), returnDomain: key.returnPath ?? ctx.config.bounceDomain };
  } catch (err) {
    ctx.log.error({ err: (err as Error).message, email: email.id }, 'could not compose or sign');
    return { ok: false, error: 'compose_failed', message: 'The message could not be built or signed.' };
  }
}
