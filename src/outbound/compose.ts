// Prepares an email's signed message from the store: the sending domain's keys, tracking applied, stored attachments
// or an SMTP submission's own bytes; the composing and signing itself is message.ts (a worker thread's, when up).
import type { EmailRow } from '../services/delivery.js';
import type { Ctx } from '../services/context.js';
import { applyTracking, trackingReady } from '../services/tracking.js';
import { cachedSigningKeyFor } from '../services/sending-domain.js';
import { storedContent } from '../services/email-content.js';
import { composeRaw, composeAndSign, type ComposeFields, type SignKeys, type Signer } from './message.js';

export { composeRaw, composeAndSign, type ComposeFields, type SignKeys, type SignJob, type Signer } from './message.js';

/** A signed message ready to send, or why the service cannot send it (→ `failed`). */
export type Prepared =
  | { ok: true; raw: Buffer; returnDomain: string }
  | { ok: false; error: 'domain_not_verified' | 'compose_failed'; message: string };

const tracked = (email: EmailRow) => email.html !== null && (email.tracking_clicks === 1 || email.tracking_opens === 1);

/** The unsigned RFC 5322 message of an email (CRLF line ends). */
export async function composeMessage(ctx: Ctx, email: EmailRow): Promise<Buffer> {
  const [{ message, attachments }] = await Promise.all([
    storedContent(ctx, email),
    tracked(email) && trackingReady(ctx),
  ]);
  if (message) return message;
  const html = email.html === null ? undefined : applyTracking(ctx, email, email.html);
  return composeRaw(email, html, ctx.config.hostname, attachments);
}

/**
 * Compose + sign with the sending domain's key; never throws on a message that cannot be built (a store error
 * reading the key rejects, as before). What the message is built from is read first, awaited (the key, remembered;
 * the tracking secret, once; a submission's bytes or the attachments): on PostgreSQL those reads go to the pool, so
 * building the message reads nothing on the synchronous connection.
 */
export async function prepareEmail(ctx: Ctx, email: EmailRow, signer: Signer = composeAndSign): Promise<Prepared> {
  const content = storedContent(ctx, email);
  void content.catch(() => {}); // awaited below, inside the try (a missing message is compose_failed, as before)
  const [key] = await Promise.all([
    cachedSigningKeyFor(ctx, email.team_id, email.sender_domain),
    tracked(email) && trackingReady(ctx),
  ]);
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
    const { message, attachments } = await content;
    const raw = await signer({
      fields,
      html,
      hostname: ctx.config.hostname,
      keys,
      attachments,
      message: message ?? undefined,
    });
    return { ok: true, raw, returnDomain: key.returnPath ?? ctx.config.bounceDomain };
  } catch (err) {
    ctx.log.error({ err: (err as Error).message, email: email.id }, 'could not compose or sign');
    return { ok: false, error: 'compose_failed', message: 'The message could not be built or signed.' };
  }
}
