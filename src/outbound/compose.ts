// Builds the message once per email: MIME via nodemailer's MailComposer (Message-ID <em_…@hostname>, Date,
// cc, reply-to, headers, html/text, never bcc), tracking applied, DKIM-signed (rsa-sha256, + ed25519-sha256).
import MailComposer from 'nodemailer/lib/mail-composer';
import type { EmailRow } from '../store/emails.js';
import type { Ctx } from '../services/context.js';
import { applyTracking } from '../services/tracking.js';
import { signingKeyFor } from '../services/sending-domain.js';
import { dkimSignature } from './dkim.js';

/** A signed message ready to send, or why the service cannot send it (→ `failed`). */
export type Prepared =
  | { ok: true; raw: Buffer; returnDomain: string }
  | { ok: false; error: 'domain_not_verified' | 'compose_failed'; message: string };

const list = (json: string | null): string[] | undefined => (json === null ? undefined : (JSON.parse(json) as string[]));

/** The unsigned RFC 5322 message of an email (CRLF line ends). */
export async function composeMessage(ctx: Ctx, email: EmailRow): Promise<Buffer> {
  const html = email.html === null ? undefined : applyTracking(ctx, email, email.html);
  const composer = new MailComposer({
    from: email.from_addr,
    to: list(email.to_json),
    cc: list(email.cc_json),
    replyTo: email.reply_to ?? undefined,
    subject: email.subject,
    text: email.text ?? undefined,
    html,
    headers: email.headers_json ? (JSON.parse(email.headers_json) as Record<string, string>) : undefined,
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
