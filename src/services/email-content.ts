// What the message builder reads of an email besides its row: the submitted message's bytes (SMTP) and the
// attachments (store/email-content). Read once per email, when it is built for delivery; lists never call this.
import { attachmentsOf, messageOf, type NewAttachment } from '../store/email-content.js';
import type { EmailRow } from '../store/emails.js';
import { runPooled } from '../store/pg/plan-driver.js';
import type { Gen } from '../store/op.js';
import type { Ctx } from './context.js';

export type StoredAttachment = NewAttachment;

/** What an email's message is built from besides its row. */
export interface StoredContent {
  /** The stored message of an SMTP submission (final headers, CRLF line ends), or null for an API email. */
  message: Buffer | null;
  /** The attachments of an API email in order (none, and for a submission: an empty list). */
  attachments: StoredAttachment[];
}

function* contentPlan(
  ctx: Pick<Ctx, 'db'>,
  email: Pick<EmailRow, 'seq' | 'raw_message' | 'attachments_json'>,
): Gen<StoredContent> {
  if (email.raw_message === 1) {
    const m = yield* messageOf(ctx.db, email.seq);
    if (!m) throw new Error('the submitted message of this email is missing');
    return { message: m, attachments: [] };
  }
  if (email.attachments_json === null) return { message: null, attachments: [] };
  const rows = yield* attachmentsOf(ctx.db, email.seq);
  return {
    message: null,
    attachments: rows.map(({ filename, content_type, content_id, content }) => ({
      filename,
      content_type,
      content_id,
      content,
    })),
  };
}

/**
 * The email's stored content, awaited before the message is built (the delivery loop's "making ready" stage): no
 * statement for an API email without attachments; otherwise one read, on the pool on PostgreSQL (the event loop goes
 * on while it comes), at once underneath elsewhere (SQLite, no pool).
 */
export function storedContent(
  ctx: Pick<Ctx, 'db'>,
  email: Pick<EmailRow, 'seq' | 'raw_message' | 'attachments_json'>,
): Promise<StoredContent> {
  if (email.raw_message !== 1 && email.attachments_json === null)
    return Promise.resolve({ message: null, attachments: [] });
  return runPooled(ctx.db, contentPlan(ctx, email), 'other');
}
