// Mailbox parsing and validation: `addr@domain` or `Name <addr@domain>` (one mailbox, strict display
// names), RFC 5321 limits, internationalised domains converted to punycode; findAddress, the tolerant extractor
// of the inbound reader. Pure.
import { domainToASCII } from 'node:url';

const LOCAL_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uFFFF-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uFFFF-]+)*$/;
const LOCAL_QUOTED = /^"([\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export interface Mailbox {
  name: string | null;
  address: string;
  local: string;
  domain: string;
}

/** domainToASCII, remembered for the last domains seen (a burst sends to a few domains; each call is ~7 µs). */
const asciiDomains = new Map<string, string>();
function asciiDomain(lower: string): string {
  let d = asciiDomains.get(lower);
  if (d === undefined) {
    d = domainToASCII(lower);
    if (asciiDomains.size >= 1000) asciiDomains.clear();
    asciiDomains.set(lower, d);
  }
  return d;
}

/** Validates a bare address; returns it normalised (domain lower-cased, punycode) or null. */
export function normaliseAddress(input: string): { address: string; local: string; domain: string } | null {
  if (input.length > 320 || /[\r\n\0]/.test(input)) return null;
  const at = input.lastIndexOf('@');
  if (at < 1 || at === input.length - 1) return null;
  const local = input.slice(0, at);
  const rawDomain = input.slice(at + 1);
  if (local.length > 64 || !(LOCAL_ATOM.test(local) || LOCAL_QUOTED.test(local))) return null;
  if (/^\[.*\]$/.test(rawDomain)) return null; // address literals are not accepted for sending
  const domain = asciiDomain(rawDomain.toLowerCase());
  if (!domain || domain.length > 253) return null;
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels[labels.length - 1]))
    return null;
  return { address: `${local}@${domain}`, local, domain };
}

/** Why a mailbox was refused: `hostile` marks forms that could show one address and send to another. */
export type MailboxResult = { ok: true; mailbox: Mailbox } | { ok: false; hostile: boolean; reason: string };

const refuse = (reason: string, hostile = true): MailboxResult => ({ ok: false, hostile, reason });
/** Characters a display name may hold only inside double quotes (RFC 5322 specials, minus `.` and `()`). */
const NAME_SPECIALS = new Set(['<', '>', '@', ',', ';', ':', '[', ']', '\\']);

/**
 * Splits `Display Name <addr>` in one strict left-to-right pass: the name is atoms and quoted strings
 * (unquoted specials refused), then exactly one `<…>`, then nothing. Returns the unquoted name and the addr-spec.
 */
function splitNamed(s: string): { name: string; spec: string } | MailboxResult {
  let name = '';
  let i = 0;
  for (; i < s.length && s[i] !== '<'; i++) {
    const c = s[i];
    if (c === '"') {
      for (i++; i < s.length && s[i] !== '"'; i++) name += s[i] === '\\' ? (s[++i] ?? '') : s[i];
      if (i >= s.length) return refuse('it has an unterminated quoted display name', false);
    } else if (NAME_SPECIALS.has(c)) {
      // Without a list separator or a "<", this is a malformed address rather than a disguised one.
      if (!/[,;:<]/.test(s)) return refuse('it is not a valid email address', false);
      return refuse(`its display name holds an unquoted "${c}"; quote the name ("…") or give one address`);
    } else name += /\s/.test(c) ? ' ' : c;
  }
  if (i >= s.length) return refuse('it is not an address nor "Name <address>"', false);
  let inQuote = false;
  let j = i + 1;
  for (; j < s.length && (inQuote || s[j] !== '>'); j++) {
    if (inQuote && s[j] === '\\') j++;
    else if (s[j] === '"') inQuote = !inQuote;
    else if (!inQuote && s[j] === '<') return refuse('it holds more than one "<"');
  }
  if (j >= s.length) return refuse('its "<" is not closed', false);
  if (s.slice(j + 1).trim() !== '') return refuse('it holds text or a second mailbox after the "<address>"');
  return { name: name.replace(/ +/g, ' ').trim(), spec: s.slice(i + 1, j).trim() };
}

/** Parses one mailbox, `addr` or `Display Name <addr>`, strictly: no groups, no second mailbox. */
export function readMailbox(input: string): MailboxResult {
  if (typeof input !== 'string' || /[\x00-\x08\x0a-\x1f\x7f]/.test(input))
    return refuse('it holds control characters', false);
  const s = input.trim();
  const bare = normaliseAddress(s);
  if (bare) return { ok: true, mailbox: { name: null, ...bare } };
  const parts = splitNamed(s);
  if ('ok' in parts) return parts;
  const addr = normaliseAddress(parts.spec);
  if (!addr) return refuse(`${JSON.stringify(parts.spec.slice(0, 100))} is not a valid email address`, false);
  return { ok: true, mailbox: { name: parts.name || null, ...addr } };
}

/** Parses `addr` or `Display Name <addr>`; null when malformed (see readMailbox for why). */
export function parseMailbox(input: string): Mailbox | null {
  const r = readMailbox(input);
  return r.ok ? r.mailbox : null;
}

/** Key used for suppression matching: exact local part lower-cased, domain lower-cased. */
export function suppressionKey(address: string): string {
  return address.toLowerCase();
}

/** The address findAddress reads, as regex source for the reader's recipient-line patterns (capture it in a group). */
export const ADDRESS_SOURCE = "[\\w.!#$%&'*+/=?^`{|}~-]+@[\\w-]+(?:\\.[\\w-]+)+";
/** Characters of an unquoted local part (RFC 5322 atext and the dot), as the inbound reader accepts them. */
const LOCAL_CHAR = /[\w.!#$%&'*+/=?^`{|}~-]/;
const LABEL_CHAR = /[\w-]/;

/** End of the dotted domain (labels of [\w-], at least two) starting at `from`, or -1. */
function domainEnd(text: string, from: number): number {
  let labels = 0;
  let end = -1;
  let i = from;
  for (;;) {
    const start = i;
    while (i < text.length && LABEL_CHAR.test(text[i] as string)) i++;
    if (i === start) break;
    labels++;
    end = i;
    if (text[i] !== '.') break;
    i++;
  }
  return labels >= 2 ? end : -1;
}

/**
 * The inbound reader's one address extractor: the address in `<…>` when the text has one, else the first
 * `local@dom.ain` in it, lower-cased; null when none. One linear pass (each character is read at most twice);
 * tolerant where readMailbox is strict: it finds an address in a DSN field, a header or a line of prose.
 */
export function findAddress(text: string | null | undefined): string | null {
  if (!text) return null;
  let first: string | null = null;
  for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', at + 1)) {
    let start = at;
    while (start > 0 && LOCAL_CHAR.test(text[start - 1] as string)) start--;
    const end = start < at ? domainEnd(text, at + 1) : -1;
    if (end < 0) continue;
    const address = text.slice(start, end).toLowerCase();
    if (text[start - 1] === '<' && text[end] === '>') return address;
    first ??= address;
  }
  return first;
}
