// Presenter of the InboundEmail API object (decisions.md "Receiving"): the same object GET /v1/inbound/{id} answers
// and the `inbound.received` event carries.
import type { InboundEmailRow } from '../store/inbound-emails.js';
import type { MailAttachment, MailReading } from '../core/inbound-mail.js';
import { iso } from './present.js';

/** What parsed_json keeps: the reading without attachment bytes, the verdicts and the envelope. */
export type InboundParsed = Omit<MailReading, 'attachments'> & {
  attachments: Omit<MailAttachment, 'content'>[];
  auth: { spf: string; dkim: string; dmarc: string };
  envelope: { mail_from: string | null; rcpt_to: { address: string; plus: string | null }[] };
};

export function presentInbound(
  r: Pick<InboundEmailRow, 'id' | 'received_at' | 'size' | 'email_id' | 'parsed_json' | 'content_expired_at'>,
) {
  const p = JSON.parse(r.parsed_json) as InboundParsed;
  return {
    object: 'inbound_email' as const,
    id: r.id,
    from: p.from,
    to: p.to,
    cc: p.cc,
    subject: p.subject,
    text: p.text,
    html: p.html,
    headers: p.headers,
    message_id: p.message_id,
    in_reply_to: p.in_reply_to,
    references: p.references,
    email_id: r.email_id,
    attachments: p.attachments,
    auth: p.auth,
    envelope: p.envelope,
    size: r.size,
    received_at: iso(r.received_at)!,
    content_expired_at: iso(r.content_expired_at),
  };
}
export type InboundEmail = ReturnType<typeof presentInbound>;
