// Reading of a message received at a team's domain (docs/receiving.md), in a parse-pool worker: mailparser (kept,
// tolerant, decodes every charset through iconv-lite and RFC 2047 words through libmime) gives addresses, subject,
// text and html, headers and attachments; attachment bytes are hashed (sha256) here, off the main thread.
import { createHash } from 'node:crypto';
import { simpleParser, type AddressObject } from 'mailparser';
import type { MailAddress, MailReading } from '../core/inbound-mail.js';

/** Header values kept per header (the rest cut): a hostile message must not blow up the event payload. */
const HEADER_VALUE_CAP = 8 * 1024;
const MAX_HEADERS = 500;

function addresses(o: AddressObject | AddressObject[] | undefined): MailAddress[] {
  const list = o === undefined ? [] : Array.isArray(o) ? o : [o];
  const out: MailAddress[] = [];
  const walk = (v: { address?: string; name?: string; group?: unknown[] }) => {
    if (Array.isArray(v.group)) for (const g of v.group) walk(g as typeof v);
    else out.push({ address: v.address || null, name: v.name || null });
  };
  for (const a of list) for (const v of a.value) walk(v);
  return out;
}

/** `Name: value` header lines (unfolded, value cut at 8 KiB), in message order. */
function headerList(lines: readonly { key: string; line: string }[]): { name: string; value: string }[] {
  return lines.slice(0, MAX_HEADERS).map(({ line }) => {
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1);
    return {
      name: name.trim(),
      value: value
        .replace(/\r?\n[ \t]*/g, ' ')
        .trim()
        .slice(0, HEADER_VALUE_CAP),
    };
  });
}

const references = (r: string | string[] | undefined): string[] => (r === undefined ? [] : Array.isArray(r) ? r : [r]);

export async function readMail(raw: Buffer): Promise<MailReading> {
  const m = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true });
  return {
    from: addresses(m.from)[0] ?? null,
    to: addresses(m.to),
    cc: addresses(m.cc),
    subject: m.subject ?? null,
    text: m.text ?? null,
    html: typeof m.html === 'string' ? m.html : null,
    headers: headerList(m.headerLines),
    message_id: m.messageId ?? null,
    in_reply_to: m.inReplyTo ?? null,
    references: references(m.references),
    attachments: m.attachments.map((a) => ({
      filename: a.filename ?? null,
      content_type: a.contentType,
      size: a.content.length,
      sha256: createHash('sha256').update(a.content).digest('hex'),
      content_id: a.contentId ?? null,
      content: new Uint8Array(a.content.buffer, a.content.byteOffset, a.content.byteLength),
    })),
  };
}
