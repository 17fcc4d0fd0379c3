// Layout-free recipient finder: the last resort for a notice whose layout no line rule knows (old Exchange, Lotus
// Notes, GroupWise, MDaemon, IMail, X.400 gateways, localised notices). General rules, no per-MTA templates:
//  1. addresses on the lines after a lead phrase ("the following address(es)", "could not be delivered to",
//     "Empfänger", "destinataire" ...), up to the first blank line after one was found;
//  2. an address standing alone on a line (bare, <angle-bracketed> or "addr:") whose next non-blank line gives a
//     reply code, an enhanced status or a failure word;
//  3. an address inside a sentence that says the delivery failed ("Your message to <a> could not be delivered").
//  4. none of these: the "To:" line the notice quotes of the undelivered message (Sisimai reads "to: " lines).
// Never the sender, the postmaster or mailer-daemon, nor (in 1.-3.) an address on a header line ("From:", "To:" ...)
// of the notice's copy of the original message.
import { findAddress } from '../core/address.js';
import type { RawRecipient } from './dsn.js';
import { SERVICE_LOCAL, errorSection, readNotice } from './nonstandard.js';

/** Lines of the error section read at most (a notice's own words come first). */
const MAX_LINES = 200;

/** Phrases after which a notice lists its failed recipients (English and the localised notices seen in the wild). */
export const LEAD =
  /following (?:e-?mail )?(?:address|recipient|destination|user)|(?:could|can ?not|was not|were not|wasn't) (?:be )?deliver(?:ed|able)? to|undeliverable to|delivery to the following|failed to deliver to|delivery (?:has )?failed (?:to|for)|(?:unknown|invalid|failed) (?:user|recipient|address)(?:e?s)?:|recipient\(s\)|(?:nicht )?zustellbar an|folgende[nr]? (?:empfänger|adresse)|destinataires? suivants?|(?:les|aux) adresses? suivantes?|destinatarios? siguientes?|siguientes? destinatarios?|volgende (?:ontvanger|adres)|destinatari(?:o)? seguent|seguent[ei] destinatar|adresāt|destinatários? seguintes?|następując(?:y|ych|ego) (?:adres|odbior)/i;

/** A line that says what went wrong: a reply code, an enhanced status or a failure word. */
export const REASON_LINE =
  /\b[45]\d\d\b|\b[45]\.\d{1,3}\.\d{1,3}\b|unknown|not (?:found|exist|known|available|reachable)|does ?n[o']t exist|no such|invalid|refused|rejected|denied|full|quota|too (?:large|big)|unbekannt|inconnu|desconocid|onbekend|sconosciut|nezinām|voll\b|pleine?|llen[oa]|vol\b|pien[oa]/i;

/** Words that make a sentence about a message ("Your message to <a> ..."), and the prepositions that end it. */
const MESSAGE_WORDS = [
  'deliver',
  'sent',
  'send',
  'mail',
  'message',
  'nachricht',
  'mensaje',
  'messaggio',
  'bericht',
  'mensagem',
  'wiadomo',
  'ziņojum',
  'vēstul',
];
const TO_WORDS = new Set(['to', 'for', 'an', 'aan', 'para', 'per', 'pour', 'à', 'a', 'für', 'voor', 'uz', 'do']);
/** Nouns that name the failed party right before its address ("unknown recipient: a@b"). */
const PARTY_WORDS = new Set([
  'recipient',
  'user',
  'mailbox',
  'address',
  'empfänger',
  'destinataire',
  'destinatario',
  '送信先', // Japanese "destination": Lotus Notes' 送信エラーレポート (delivery failure report) names its recipient so
]);
/** Failure words at the start of a sentence that names its address after them ("User unknown: a@b"). */
const FAILURE_WORDS = [
  'unknown',
  'not found',
  'does not exist',
  'no such',
  'invalid',
  'rejected',
  'refused',
  'unbekannt',
  'inconnu',
  'desconocid',
  'onbekend',
  'sconosciut',
];

/** Is the text before an address (other addresses blanked) a sentence whose object is a failed recipient? */
function failedSentence(before: string): boolean {
  const words = before
    .toLowerCase()
    .replace(/[<("':]/g, ' ')
    .split(/\s+/)
    .filter(Boolean)
    .slice(-8);
  const last = words[words.length - 1] ?? '';
  if (PARTY_WORDS.has(last)) return true;
  if (TO_WORDS.has(last) && words.slice(0, -1).some((w) => MESSAGE_WORDS.some((m) => w.startsWith(m)))) return true;
  const head = before.slice(0, 40).toLowerCase();
  return FAILURE_WORDS.some((w) => head.includes(w));
}

/** Header lines of a copy of the original message, and lines that name the notice's own parties. */
export const HEADER_LINE =
  /^\s*(?:from|to|cc|bcc|sender|reply-to|return-path|errors-to|message-id|in-reply-to|references|received|by|for|envelope-from|x-[\w-]+|delivered-to|list-[\w-]+)\s*:/i;

/**
 * An address as written, less a leading quote and an address-type prefix: "SMTP=a@b", "rfc822:a@b", and the X.400
 * domain-defined attribute of Exchange/X.400 gateways ("c=US;a= ;p=ORG;dda:SMTP=a@b").
 */
function clean(raw: string): string | null {
  const typed = /(?:smtp|rfc-?822)[=:]/i.exec(raw);
  return findAddress((typed ? raw.slice(typed.index + typed[0].length) : raw).replace(/^['"`]+/, ''));
}

/** The words of a line that hold an address, with where each starts. */
function addressWords(line: string): { word: string; at: number }[] {
  const out: { word: string; at: number }[] = [];
  let at = 0;
  for (const word of line.split(/[\s<>()[\],;]/)) {
    if (word.includes('@')) out.push({ word, at });
    at += word.length + 1;
  }
  return out;
}

function candidates(line: string): string[] {
  return addressWords(line)
    .map((w) => clean(w.word))
    .filter((a): a is string => !!a);
}

/** The address a line holds alone ("a@b", "<a@b>", "- 'a@b':"), or null. */
function alone(line: string): string | null {
  const words = line.split(/[\s<>]/).filter(Boolean);
  if (words.length !== 1) return null;
  const a = clean(words[0] as string);
  const rest = a
    ? (words[0] as string)
        .toLowerCase()
        .replace(/^(?:smtp|rfc-?822)[=:]/, '')
        .replace(a, '')
    : '';
  return a && /^[^\w@]*$/.test(rest) ? a : null;
}

function nextText(lines: string[], i: number): string {
  for (let j = i + 1; j < lines.length && j <= i + 3; j++) if ((lines[j] as string).trim()) return lines[j] as string;
  return '';
}

/** Does a notice's text about a recipient give a reason (a code, a status or a failure word)? */
export function namesReason(text: string): boolean {
  return REASON_LINE.test(text);
}

/** Failed recipients of a notice of any layout (see the header of this file); empty when none is named. */
export function looseRecipients(section: string, exclude: ReadonlySet<string>): string[] {
  const lines = section.split('\n').slice(0, MAX_LINES);
  const found: string[] = [];
  const take = (a: string) => {
    if (!exclude.has(a) && !SERVICE_LOCAL.test(a) && !found.includes(a)) found.push(a);
  };
  // 1. after a lead phrase
  for (let i = 0; i < lines.length; i++) {
    const m = LEAD.exec(lines[i] as string);
    if (!m) continue;
    const tail = (lines[i] as string).slice(m.index);
    if (!HEADER_LINE.test(lines[i] as string)) candidates(tail).forEach(take);
    let seen = found.length > 0;
    for (let j = i + 1; j < lines.length && j <= i + 12; j++) {
      const l = lines[j] as string;
      if (!l.trim()) {
        if (seen) break;
        continue;
      }
      if (HEADER_LINE.test(l)) break;
      const here = candidates(l);
      here.forEach(take);
      seen ||= here.length > 0;
    }
    if (found.length) return found;
  }
  // 2. alone on a line, a reason on the next
  for (let i = 0; i < lines.length; i++) {
    const a = alone(lines[i] as string);
    if (a && REASON_LINE.test(nextText(lines, i))) take(a);
  }
  if (found.length) return found;
  // 3. inside a sentence about the failure
  for (const line of lines) {
    if (HEADER_LINE.test(line)) continue;
    const words = addressWords(line);
    for (const w of words) {
      const a = clean(w.word);
      let before = line.slice(0, w.at);
      for (const o of words) before = before.replace(o.word, ' ');
      if (a && failedSentence(before)) take(a);
    }
  }
  if (found.length) return found;
  // 4. the "To:" line the notice quotes of the message it could not deliver (Sisimai's RFC 3464 fallback reads "to: ")
  for (const line of lines) if (/^\s*to:\s/i.test(line)) candidates(line).forEach(take);
  return found;
}

/** The recipients a notice of an unknown layout names (looseRecipients), read like a notice's lines; null if none. */
export function looseNotice(notice: string, exclude: Set<string>): RawRecipient[] | null {
  const section = errorSection(notice);
  const addrs = looseRecipients(section, exclude);
  if (!addrs.length) return null;
  const raws = readNotice(section, addrs, exclude, { recipientLines: [] });
  // a recipient's own lines without a reason ("Name (a@b)" in a list): the notice's reason is everyone's
  for (const r of raws) {
    if (r.diagnostic === null) continue; // the layout says no cause (Exim's "an undisclosed address")
    const own = (r.diagnostic ?? '')
      .toLowerCase()
      .split(r.address ?? '\0')
      .join(' ');
    if (!namesReason(own)) r.diagnostic = section.replace(/\s+/g, ' ').trim();
  }
  return raws;
}
