// Sisimai's RFC 3464 decoder, its fallback for a notice with no delivery-status part that no vendor decoder takes
// (Sisimai::RFC3464, BODY_DECODER_FOR_FALLBACK, 5.1.0): which lines name a recipient, and which text is each one's
// error. Ported from Sisimai (BSD-2-Clause). Pure.
import { findAddress } from '../core/address.js';
import { type RawRecipient, failedRecipient } from './dsn.js';
import { MAX_NOTICE_RECIPIENTS } from './nonstandard.js';

/** Reading starts at the last of these the notice holds (each cut applied in turn, as Sisimai does). */
const READ_AFTER = [
  '\tthe postfix ',
  'a summary of the undelivered message you sent follows:',
  'the following is the error message',
  'the message that you sent was undeliverable to the following',
  'your message was not delivered to ',
];
/** Reading stops at a line that starts with one of these (the returned message, a DSN part, a header) ... */
const STOP_AT_START = [
  'content-type: message/rfc822',
  'content-type: text/rfc822-headers',
  'return-path: <',
  'a copy of the original message below this line:',
  'content-type: message/delivery-status',
  'for further assistance, please contact ',
  'here is a copy of the first part of the message',
  'received:',
  'received-from-mta:',
  'reporting-mta:',
  'reporting-ua:',
  'return-path:',
  'the non-delivered message is attached to this message',
];
/** ... or that holds one of these. */
const STOP_IN_LINE = [
  'attachment is a copy of the message',
  'below is a copy of the original message:',
  'below this line is a copy of the message',
  'message contains ',
  'message text follows: ',
  'original message follows',
  'the attachment contains the original mail headers',
  'the first ',
  'unsent message below',
  'your message reads (in part):',
];
/** Lines skipped: those starting with one of the first list, those holding one of the second. */
const SKIP_AT_START = ['   -----', ' -----', '--', '|--', '*'];
const SKIP_IN_LINE = ['mail from:', 'message-id:', '  from: '];
/** A line naming a recipient: an address on a line that starts with one of these ... */
const ADDRESS_LINE_START = [' ', '"', '<'];
/** ... or on a line that holds one of these, or on the line after one that does. */
const NEAR_ADDRESS = [
  'address:',
  'addressed to',
  'could not be delivered to:',
  'delivered to',
  'delivery failed:',
  'did not reach the following recipient:',
  'error-for:',
  'failed recipient:',
  'failed to deliver to',
  'intended recipient:',
  'mailbox is full:',
  'recipient:',
  'rcpt to:',
  'smtp server <',
  'the following recipients returned permanent errors:',
  'the following addresses had permanent errors',
  'the following message to',
  'to: ',
  'unknown user:',
  'unable to deliver mail to the following recipient',
  'undeliverable to',
  'undeliverable address:',
  'you sent mail to',
  'your message has encountered delivery problems to the following recipients:',
  'was automatically rejected',
  'was rejected due to',
];

const startsWithAny = (l: string, list: readonly string[]) => list.some((s) => l.startsWith(s));
const holdsAny = (l: string, list: readonly string[]) => list.some((s) => l.includes(s));

/** Whether the line names a recipient, the previous non-empty line (lower-case) being `before`. */
function namesRecipient(lower: string, before: string | undefined): boolean {
  if (lower.indexOf('@') <= 1) return false;
  if (startsWithAny(lower, ADDRESS_LINE_START) || holdsAny(lower, NEAR_ADDRESS)) return true;
  return before !== undefined && holdsAny(before, NEAR_ADDRESS) && lower.indexOf('.') > 1 && !lower.includes('$');
}

/** The first word of the line that holds an address (a word with "@" after its second character), or null. */
function addressOf(line: string): string | null {
  for (const word of line.split(/\s+/)) if (word.indexOf('@') > 1 && findAddress(word)) return findAddress(word);
  return null;
}

/**
 * Sisimai::SMTP::Command->find: the last of HELO, EHLO, STARTTLS, AUTH, MAIL FROM, RCPT, DATA, QUIT, XFORWARD found
 * in the text (capitals only), each searched from where the previous one was found.
 */
export function sisimaiCommand(text: string): string | null {
  const detectable = ['HELO', 'EHLO', 'STARTTLS', 'AUTH PLAIN', 'AUTH LOGIN', 'AUTH CRAM-', 'AUTH DIGEST-'];
  const found: string[] = [];
  let from = 0;
  for (const e of [...detectable, 'MAIL F', 'RCPT', 'RCPT T', 'DATA', 'QUIT', 'XFORWARD']) {
    const at = text.indexOf(e, from);
    if (at < 0) continue;
    if (at + 4 > text.length) break;
    from = at;
    const cv = text.slice(at, at + 4);
    if (found.includes(cv)) continue;
    found.push(cv === 'STAR' ? 'STARTTLS' : cv === 'XFOR' ? 'XFORWARD' : cv);
  }
  return found.pop() ?? null;
}

/**
 * The recipients Sisimai's RFC 3464 fallback reads from a notice's text: one per line that names one (see
 * namesRecipient), a new one only when the address differs from the previous; each one's error is every line read
 * from the previous recipient's line (the first one's from the start) to the next one's. Empty when none is named.
 */
export function fallbackRecipients(body: string): RawRecipient[] {
  let text = body.replace(/\r\n?/g, '\n');
  const lower = text.toLowerCase();
  for (const e of READ_AFTER) {
    const at = lower.indexOf(e);
    if (at >= 0) text = text.slice(at);
  }
  const found: { address: string | null; lines: string[] }[] = [{ address: null, lines: [] }];
  const seen: string[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const l = line.toLowerCase();
    seen.push(l);
    if (startsWithAny(l, STOP_AT_START) || holdsAny(l, STOP_IN_LINE)) break;
    if (startsWithAny(l, SKIP_AT_START) || holdsAny(l, SKIP_IN_LINE)) continue;
    let current = found[found.length - 1] as (typeof found)[number];
    if (namesRecipient(l, seen[seen.length - 2])) {
      const address = addressOf(line);
      if (current.address && current.address !== address) {
        if (found.length >= MAX_NOTICE_RECIPIENTS) break;
        current = { address: null, lines: [] };
        found.push(current);
      }
      current.address = address;
    }
    current.lines.push(line);
  }
  return found
    .filter((r) => r.address)
    .map((r) => {
      const diagnostic = r.lines.join(' ').replace(/\s+/g, ' ').trim();
      return failedRecipient(r.address, diagnostic || null, sisimaiCommand(diagnostic));
    });
}
