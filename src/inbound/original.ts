// Extracts facts about the returned original message: Message-ID, our email id (em_…), the
// VERP envelope sender and From. Looks at message/rfc822 parts, header parts and inline copies.
import { findAddress } from '../core/address.js';
import { type Entity, header, leaves, parseHeaders } from './mime.js';
import type { OriginalInfo } from '../core/report.js';

export type { OriginalInfo };

const EMAIL_ID = /<?(em_[0-9a-z]{26})@/i;

function headerBlock(root: Entity): Map<string, string[]> | null {
  const part = leaves(root).find((p) => p.type === 'message/rfc822' || p.type.startsWith('text/rfc822-header'));
  if (part) return parseHeaders(part.text.replace(/\r/g, '').split(/\n\n/)[0] ?? '');
  const text = leaves(root)
    .filter((p) => p.type.startsWith('text/'))
    .map((p) => p.text)
    .join('\n');
  const block = inlineHeaders(
    text.slice(text.search(/copy of|original message|headers follow|unsent message|rfc822/i) + 1),
  );
  return block ? parseHeaders(block) : null;
}

const FIRST_FIELD = /^(?:Return-Path|Received|Message-I[Dd]|From|To|Subject|Date):/;
const NEXT_FIELD = /^[\w-]+:/;

/**
 * An inline copy of the original headers: a line starting with a common field, then at least one more
 * field or continuation line, each ending in a newline. A line-by-line scan (a regex here was quadratic).
 */
function inlineHeaders(text: string): string | null {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length - 1; i++) {
    if (!FIRST_FIELD.test(lines[i] as string)) continue;
    let j = i + 1;
    // the last array element has no newline after it, so it never belongs to the block
    while (j < lines.length - 1 && (NEXT_FIELD.test(lines[j] as string) || /^[ \t]/.test(lines[j] as string))) j++;
    if (j > i + 1) return `${lines.slice(i, j).join('\n')}\n`;
  }
  return null;
}

export function readOriginal(root: Entity): OriginalInfo {
  const h = headerBlock(root) ?? new Map<string, string[]>();
  // The envelope sender a DSN (RFC 3464 X-Original-Mail-From) or an ARF (RFC 5965 §3.2) names: our VERP address.
  const dsn = leaves(root).find((p) => p.type === 'message/delivery-status' || p.type === 'message/feedback-report');
  const mid = header(h, 'message-id');
  const messageId = mid ? (/<[^<>]+>/.exec(mid)?.[0] ?? mid.trim()) : null;
  const xid = header(h, 'x-email-id');
  const emailId =
    EMAIL_ID.exec(messageId ?? '')?.[1]?.toLowerCase() ??
    (xid && /^em_[0-9a-z]{26}$/i.test(xid.trim()) ? xid.trim() : null);
  const envFrom = /^(?:X-)?Original-Mail-From:\s*(.+)$/im.exec(dsn?.text ?? '')?.[1] ?? null;
  const returnPath = findAddress(envFrom) ?? findAddress(header(h, 'return-path'));
  return { message_id: messageId, email_id: emailId, return_path: returnPath, from: findAddress(header(h, 'from')) };
}

/**
 * The first address of the returned original's To: header (Sisimai's RFC 3464 decoder takes it when a notice names
 * no recipient address, e.g. an Exchange notice that lists display names only).
 */
export function originalTo(root: Entity): string | null {
  return findAddress(header(headerBlock(root) ?? new Map<string, string[]>(), 'to'));
}
