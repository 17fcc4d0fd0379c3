// SMTP submission use-cases: an AUTH password as an API key (scope emails:send), the key's rate-limit token (the
// buckets of the HTTP API), and a submitted message turned into an email through the same path as POST /emails.
import { createHash } from 'node:crypto';
import { ApiError } from '../core/errors.js';
import { authenticate, requireScope, type Principal } from './keys.js';
import { checkEmail, type EmailInput } from './email-input.js';
import { idempotent, insertChecked } from './emails.js';
import { presentEmail } from './present.js';
import { keyLimiter } from './rate-limits.js';
import { readSubmitted } from './submitted-message.js';
import type { Ctx } from './context.js';

/** The key an AUTH password names, if it may send; throws the API's authentication or permission error. */
export async function authenticateSubmission(ctx: Ctx, password: string): Promise<Principal> {
  if (!/^\S{1,200}$/.test(password))
    throw new ApiError('authentication_error', 'invalid_api_key', 'The API key is unknown or revoked.');
  const p = await authenticate(ctx, `Bearer ${password}`);
  requireScope(p, 'emails:send');
  return p;
}

/** Takes one token from `bucket` (a key id, or `ip:<address>` for failed sign-ins): seconds to wait, or 0 when taken. */
export function takeToken(ctx: Ctx, bucket: string): number {
  const r = keyLimiter(ctx)?.take(bucket);
  return !r || r.ok ? 0 : r.retryAfter;
}

/** Envelope recipients sorted by the headers: To, Cc, else Bcc (never written in the message). */
function inputOf(m: ReturnType<typeof readSubmitted>, rcptTo: readonly string[]): EmailInput {
  const to: string[] = [];
  const cc: string[] = [];
  const bcc: string[] = [];
  for (const r of rcptTo) {
    const a = r.toLowerCase();
    (m.to.has(a) ? to : m.cc.has(a) ? cc : bcc).push(r);
  }
  return { from: m.from, to, cc: cc.length ? cc : null, bcc: bcc.length ? bcc : null, subject: m.subject };
}

/** Idempotency key of a submission: the client's Message-ID (hashed: any length, never an API key's namespace). */
const idemKeyOf = (messageId: string | null) =>
  messageId === null ? undefined : `smtp:${createHash('sha256').update(messageId).digest('hex')}`;

/**
 * Stores a submitted message as an email (validation, suppression, domain, credits, events as POST /emails).
 * The same Message-ID from the same team within 24 hours answers the first email's id and stores nothing.
 */
export async function submitMessage(
  ctx: Ctx,
  p: Principal,
  rcptTo: readonly string[],
  raw: Buffer,
): Promise<{ id: string; replayed: boolean }> {
  const m = readSubmitted(raw);
  const key = idemKeyOf(m.messageId);
  const r = await idempotent(ctx, p, key, key ?? '', function* () {
    const c = checkEmail(inputOf(m, rcptTo), ctx.now(), { maxBytes: ctx.config.maxMessageBytes, message: raw });
    c.attachments = { rows: [], info: m.attachments, builtBytes: 0 };
    c.sender = m.sender;
    return presentEmail(yield* insertChecked(ctx, p, c, (id) => m.build(id, ctx.config.hostname, ctx.now())));
  });
  return { id: r.body.id, replayed: r.replayed };
}
