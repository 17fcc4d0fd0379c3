// Extracts facts about the returned original message: Message-ID, our email id (em_…), the
// VERP envelope sender and From. Looks at message/rfc822 parts, header parts and inline copies.
import { type Entity, header, leaves, parseHeaders } from './mime.js';

export interface OriginalInfo {
  message_id: string | null; email_id: string | null; return_path: string | null; from?: string | null;
}

const EMAIL_ID = /<?(em_[0-9a-z]{26})@/i;

function headerBlock(root: Entity): Map<string, string[]> | null {
  const part = leaves(root).find((p) => p.type === 'message/rfc822' || p.type.startsWith('text/rfc822-header'));
  if (part) return parseHeaders(part.text.replace(/\r/g, '').split(/\n\n/)[0] ?? '');
  const text = leaves(root).filter((p) => p.type.startsWith('text/')).map((p) => p.text).join('\n');
  const m = /^(?:Return-Path|Received|Message-I[Dd]|From|To|Subject|Date):[^\n]*\n(?:[\w-]+:[^\n]*\n|[ \t][^\n]*\n)+/m
    .exec(text.slice(text.search(/copy of|original message|headers follow|unsent message|rfc822/i) + 1));
  return m ? parseHeaders(m[0]) : null;
}

function addr(v: string | null): string | null {
  const m = /<?([^<>\s"]+@[^<>\s"]+?)>?(?:\s|$)/.exec(v ?? '');
  return m ? (m[1] as string).toLowerCase() : null;
}

export function readOriginal(root: Entity): OriginalInfo {
  const h = headerBlock(root) ?? new Map<string, string[]>();
  const dsn = leaves(root).find((p) => p.type === 'message/delivery-status')?.text ?? '';
  const mid = header(h, 'message-id');
  const messageId = mid ? (/<[^>]+>/.exec(mid)?.[0] ?? mid.trim()) : null;
  const xid = header(h, 'x-email-id');
  const emailId = EMAIL_ID.exec(messageId ?? '')?.[1]?.toLowerCase() ?? (xid && /^em_[0-9a-z]{26}$/i.test(xid.trim()) ? xid.trim() : null);
  const envFrom = /^(?:X-)?Original-Mail-From:\s*(.+)$/im.exec(dsn)?.[1] ?? null;
  const returnPath = addr(envFrom) ?? addr(header(h, 'return-path'));
  return { message_id: messageId, email_id: emailId, return_path: returnPath, from: addr(header(h, 'from')) };
}
