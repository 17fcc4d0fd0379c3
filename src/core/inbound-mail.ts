// What the parse pool answers for a message received at a team's domain (inbound/mail.ts reads it). Types only.
export interface MailAddress {
  address: string | null;
  name: string | null;
}
export interface MailAttachment {
  filename: string | null;
  content_type: string;
  size: number;
  sha256: string;
  content_id: string | null;
  content: Uint8Array;
}
export interface MailReading {
  from: MailAddress | null;
  to: MailAddress[];
  cc: MailAddress[];
  subject: string | null;
  text: string | null;
  html: string | null;
  headers: { name: string; value: string }[];
  message_id: string | null;
  in_reply_to: string | null;
  references: string[];
  attachments: MailAttachment[];
}
/** A message that could not be read within the budget (or crashed its worker). */
export interface MailUnread {
  error: 'timeout' | 'failed';
}
