// Notice formats: detects which MTA's or provider's notice a message is, and reads its reason with that format's
// tables (the tables themselves are data in the provider registry, src/core/providers/). Pure functions.
import { ADDRESS_SOURCE } from '../core/address.js';
import type { BounceReason } from '../core/bounce-reasons.js';
import { aligned } from '../core/classify.js';
import {
  type NoticeFormat,
  NOTICE_FORMATS,
  GENERIC_LHOST_SIGNS,
  UNFORMATTED_DECODER_SIGNS,
} from '../core/providers/index.js';
import { type Entity, decodeWords, header } from './mime.js';

export type { NoticeFormat } from '../core/providers/index.js';

const A = ADDRESS_SOURCE;

/** Recipient lines of provider formats (capture 1 = the address); specific enough to try on any notice. */
export const FORMAT_RECIPIENT_LINES: readonly RegExp[] = [
  new RegExp(`Could not be delivered to: <(${A})>`, 'i'), // au/KDDI
  new RegExp(`^(${A}) \\[[^\\]]+\\]\\s*$`), // X1: "address [User unknown]"
  new RegExp(`^\\s+\\* (${A})\\s*$`), // X3: "  * address"
  new RegExp(`rejected recipient <(${A})>`, 'i'), // X6
  new RegExp(`^The following recipients returned permanent errors: (${A})`, 'i'), // X6
  new RegExp(`^Unable to deliver message to: <(${A})>`, 'i'), // MailFoundry
  new RegExp(`^\\s*Original address: (${A})\\s*$`, 'i'), // Messaging Server
  new RegExp(`^\\s*Recipient: <(${A})>`, 'i'), // EZweb (Sendmail-like rejection list)
  new RegExp(`^\\s+[^\\s@]+@\\S+\\.[a-zA-Z]+ <(${A})>:`), // Exim: "  a@b <c@d>: malformed address: ..."
];

/** Perl's truth of a header value, as Sisimai's Lhost modules test it: present, not empty, not "0". */
const truthy = (v: string | null | undefined): boolean => !!v && v.trim() !== '' && v.trim() !== '0';

function passes(f: NoticeFormat, h: Map<string, string[]>, body: string): number {
  const d = f.detect;
  const one = (name: string): string => decodeWords(header(h, name) ?? '');
  let n = 0;
  if (d.from?.test(one('from'))) n++;
  if (d.subject?.test(one('subject'))) n++;
  if (d.messageId?.test(one('message-id'))) n++;
  if (d.replyTo?.test(one('reply-to'))) n++;
  if (d.contentType?.test(one('content-type'))) n++;
  if (d.xMailer?.test(one('x-mailer'))) n++;
  if (d.received && (h.get('received') ?? []).some((r) => d.received?.test(r))) n++;
  if (d.body?.test(body)) n++;
  // a header counts only with a value (Sisimai tests the value: an empty "X-MS-Exchange-Message-Is-Ndr:" is no sign)
  for (const name of d.headers ?? []) if (truthy(header(h, name))) n++;
  return n;
}

/** The first format (in the registry's NOTICE_ORDER) whose detection tests pass for this message, or null. */
export function detectFormat(root: Entity, body: string): NoticeFormat | null {
  return (
    NOTICE_FORMATS.find((f) => passes(f, root.headers, body) >= (f.need ?? 1) && (!f.opens || f.opens.test(body))) ??
    null
  );
}

/** The reason the format's tables give for this error text, if any: its header rule, then its status codes, then its phrases. */
export function formatReason(
  f: NoticeFormat | null,
  root: Entity,
  text: string,
  status: string | null,
): BounceReason | null {
  if (!f) return null;
  const hr = f.headerReason;
  if (hr && hr.value.test(header(root.headers, hr.name) ?? '')) return hr.reason;
  if (status) for (const [re, reason] of f.statuses ?? []) if (re.test(status)) return reason;
  for (const r of f.reasons ?? []) if (r.phrases.some((p) => text.includes(p))) return r.reason;
  return null;
}

/**
 * The family of the Sisimai vendor decoder that would still take a message no notice format takes (Amavis, Sendmail,
 * Postfix, qmail, V5sendmail, Yandex): its signs, and its opening lines in the notice's text where the decoder needs
 * them; null: Sisimai reads it with its generic RFC 3464 decoder.
 */
export function vendorFamily(root: Entity, notice: string): string | null {
  const subject = decodeWords(header(root.headers, 'subject') ?? '');
  const from = decodeWords(header(root.headers, 'from') ?? '');
  const received = root.headers.get('received') ?? [];
  const hit = GENERIC_LHOST_SIGNS.find(
    (d) =>
      (d.subject?.test(subject) || d.from?.test(from) || (d.received && received.some((r) => d.received?.test(r)))) &&
      (!d.needs || (header(root.headers, d.needs) ?? '').trim() !== '') &&
      (!d.starts || startsReading(notice, d.starts)),
  );
  return hit?.family ?? null;
}

/** Whether a line of the notice holds one of the decoder's opening line signs (its parts in order). */
function startsReading(notice: string, starts: readonly (readonly string[])[]): boolean {
  return notice.split('\n').some((line) => starts.some((parts) => aligned(line, parts)));
}

/** The Sisimai decoder the reader has no notice format of that takes the message (UNFORMATTED_DECODER_SIGNS), or null. */
export function unformattedDecoder(root: Entity): string | null {
  const values = (name: string) => (root.headers.get(name) ?? []).map((v) => decodeWords(v));
  const hit = UNFORMATTED_DECODER_SIGNS.find((d) => d.all.every(([name, re]) => values(name).some((v) => re.test(v))));
  return hit?.family ?? null;
}
