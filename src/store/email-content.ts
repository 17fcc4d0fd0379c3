// The bytes of an email that stay out of emails/deliveries (migration 010): a submitted message (SMTP) and
// API attachments, keyed by email seq. Only the message builder reads them; lists and the queue never do.
import { sql, type DB } from './db.js';
import { all, get, run, type Gen } from './op.js';

export interface NewAttachment {
  filename: string;
  content_type: string;
  content_id: string | null;
  content: Buffer;
}
export interface AttachmentRow extends NewAttachment {
  id: number;
  email_seq: number;
}

/** Stores the message bytes of an email. Call inside the transaction that inserts the email. */
export const insertMessage = (db: DB, emailSeq: number, message: Buffer) =>
  run(sql(db, 'INSERT INTO email_messages (email_seq, message) VALUES (?, ?)'), emailSeq, message);

/** Stores an email's attachments in order. Call inside the transaction that inserts the email. */
export function* insertAttachments(db: DB, emailSeq: number, list: readonly NewAttachment[]): Gen<void> {
  const ins = sql(
    db,
    'INSERT INTO email_attachments (email_seq, filename, content_type, content_id, content) VALUES (?, ?, ?, ?, ?)',
  );
  for (const a of list) yield* run(ins, emailSeq, a.filename, a.content_type, a.content_id, a.content);
}

export const messageOf = (db: DB, emailSeq: number): Gen<Buffer | undefined> =>
  get(sql<Buffer>(db, 'SELECT message FROM email_messages WHERE email_seq = ?').pluck(), emailSeq);

export const attachmentsOf = (db: DB, emailSeq: number): Gen<AttachmentRow[]> =>
  all(sql<AttachmentRow>(db, 'SELECT * FROM email_attachments WHERE email_seq = ? ORDER BY id'), emailSeq);
