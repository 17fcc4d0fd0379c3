// What the message builder reads of an email besides its row: the submitted message's bytes (SMTP) and the
// attachments (store/email-content). Read once per email, when it is built for delivery; lists never call this.
import { attachmentsOf, messageOf, type NewAttachment } from '../store/email-content.js';
import type { EmailRow } from '../store/emails.js';
import type { Ctx } from './context.js';
import { runSync } from '../store/op.js';

export type StoredAttachment = NewAttachment;

/** The stored message of an SMTP submission (final headers, CRLF line ends), or null for an API email. */
export function storedMessage(ctx: Ctx, email: Pick<EmailRow, 'seq' | 'raw_message'>): Buffer | null {
  if (email.raw_message !== 1) return null;
  const m = runSync(messageOf(ctx.db, email.seq));
  if (!m) throw new Error('the submitted message of this email is missing');
  return m;
}

/** The attachments of an API email in order (none: an empty list, without a query). */
export function storedAttachments(ctx: Ctx, email: Pick<EmailRow, 'seq' | 'attachments_json'>): StoredAttachment[] {
  if (email.attachments_json === null) return [];
  return runSync(attachmentsOf(ctx.db, email.seq)).map(({ filename, content_type, content_id, content }) => ({
    filename,
    content_type,
    content_id,
    content,
  }));
}
