// Classifies an SMTP reply or a DSN recipient (status, reply code, diagnostic text, command)
// into a bounce reason, hard flag and status (Sisimai-compatible, pseudo-codes included). Pure.
import { type BounceReason, RETRY_REASONS, isExplicit, isHard, pseudoStatus, NOT_BOUNCE } from './bounce-reasons.js';
import { LIVE_PHRASES } from './reply-rules-live.js';
import { LOCALISED_PHRASES } from './reply-rules-localised.js';
import { REPLY_RULES, STATUS_REASONS, PRIMARY_ORDER, FALLBACK_ORDER, type ReplyRule } from './reply-rules.js';

export interface ReplyInput {
  code: number | null;
  enhanced: string | null;
  text: string;
}
export interface ReplyClass {
  reason: BounceReason;
  hard: boolean | null;
}

/** Everything a bounce report tells about one recipient. */
export interface BounceFacts {
  status?: string | null;
  replycode?: string | number | null;
  diagnostic?: string | null;
  /** last SMTP command: CONN, EHLO, HELO, MAIL, RCPT, DATA… */
  command?: string | null;
  action?: string | null;
  /** diagnostic type: SMTP, X-UNIX, X-POSTFIX… */
  spec?: string | null;
  /** reason already decided by a format-specific reader */
  reason?: BounceReason | null;
  /** the notice's own words about this recipient, read with the diagnostic's phrases (not for codes) */
  context?: string | null;
  /**
   * the diagnostic as its phrases are read, when that differs from `diagnostic` (a multi-line reply without its
   * repeated "550-5.7.1" prefixes, as Sisimai::Fact reads it); its codes are still read from `diagnostic`
   */
  phrases?: string | null;
  /** a live SMTP reply (the delivery loop's), read with the live-only phrases too (reply-rules-live.ts) */
  live?: boolean;
  /** `reason` is final even when retry-class (the remote host's table said it: Sisimai::Fact keeps Rhost's answer) */
  final?: boolean;
}
export interface BounceReading {
  reason: BounceReason;
  hard: boolean | null;
  status: string | null;
  replycode: string | null;
}

/**
 * The phrase rules a notice is read with (Sisimai 5.1.0's lists: it knows no other language), and a live reply's (plus
 * the localised phrases and the live-only ones).
 */
function mergeRules(live: boolean): Map<BounceReason, ReplyRule> {
  return new Map(
    REPLY_RULES.map((r) => {
      const more = live ? LIVE_PHRASES[r.reason] : undefined;
      const localised = live ? (LOCALISED_PHRASES[r.reason] ?? []) : [];
      const includes = [...r.includes, ...localised, ...(more?.includes ?? [])];
      return [r.reason, { ...r, includes, aligned: [...(r.aligned ?? []), ...(more?.aligned ?? [])] }];
    }),
  );
}
const RULES = mergeRules(false);
const LIVE_RULES = mergeRules(true);
/** Commands after which Sisimai's Filtered and SpamDetected rules do not read the text (their true()). */
const EXCEPT_DATA = new Set(['CONN', 'EHLO', 'HELO', 'MAIL', 'RCPT']);
const REPLY_CODES = new Set([
  '211',
  '214',
  '220',
  '221',
  '235',
  '250',
  '251',
  '252',
  '253',
  '354',
  '421',
  '422',
  '430',
  '432',
  '450',
  '451',
  '452',
  '453',
  '454',
  '455',
  '458',
  '459',
  '500',
  '501',
  '502',
  '503',
  '504',
  '520',
  '521',
  '523',
  '524',
  '525',
  '530',
  '533',
  '534',
  '535',
  '538',
  '550',
  '551',
  '552',
  '553',
  '554',
  '555',
  '556',
  '557',
  '570',
  '571',
]);
const IPV4 = /\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b/g;

/** Does the (lower-case) text match the phrase rule of `reason` (a notice's, or with `live` a live reply's)? */
export function textMatches(reason: BounceReason, text: string, live = false): boolean {
  const rule = (live ? LIVE_RULES : RULES).get(reason);
  if (!rule || !text) return false;
  if (rule.excludes?.some((p) => text.includes(p))) return false;
  if (rule.includes.some((p) => text.includes(p))) return true;
  return (rule.aligned ?? []).some((parts) => aligned(text, parts));
}

/** Whether the text holds each of the parts, in this order (Sisimai::String->aligned). */
export function aligned(text: string, parts: readonly string[]): boolean {
  let at = 0;
  for (const p of parts) {
    const i = text.indexOf(p, at);
    if (i < 0) return false;
    at = i + p.length;
  }
  return true;
}

/** First enhanced status code in a text; *.0.0 and 4.4.7 only when nothing better is there. */
export function findStatus(text: string | null | undefined): string | null {
  if (!text) return null;
  const t = ` ${text.replace(IPV4, '***')} `;
  const re = /(?<![\d.vV])([245])\.([0-7])\.(\d{1,3})(?![\d])/g;
  let fallback: string | null = null;
  for (const m of t.matchAll(re)) {
    const code = `${m[1]}.${m[2]}.${m[3]}`;
    if (code.endsWith('.0.0') || code === '4.4.7') {
      fallback ??= code;
      continue;
    }
    return code;
  }
  return fallback;
}

/** First SMTP reply code (2xx/4xx/5xx) in a text, ignoring IP addresses and status codes. */
export function findReply(text: string | null | undefined, klass?: string): string | null {
  if (!text) return null;
  const t = ` ${text.replace(IPV4, '***')} `;
  for (const m of t.matchAll(/(?<![\w.-])([245]\d\d)(?![\w.])/g)) {
    const c = m[1] as string;
    if (REPLY_CODES.has(c) && (!klass || c[0] === klass)) return c;
  }
  return null;
}

/** Splits a raw reply line ("550-5.1.1 <x@y>: User unknown") into code, enhanced code and text. */
export function parseReplyLine(line: string): ReplyInput {
  const flat = line.replace(/\r?\n/g, ' ').trim();
  // What /^([245]\d\d)(?:[ -]+|$)(?:([245]\.\d{1,3}\.\d{1,3})\b)?\s*(.*)$/ read, in linear steps (that one was cubic).
  const m = /^([245]\d\d)(?:[ -]+|$)/.exec(flat);
  const rest = m ? flat.slice(m[0].length) : '';
  const enhanced = /^[245]\.\d{1,3}\.\d{1,3}\b/.exec(rest)?.[0];
  const text = (enhanced ? rest.slice(enhanced.length) : rest).trimStart();
  if (!m || /[\n\r\u2028\u2029]/.test(text)) return { code: null, enhanced: findStatus(flat), text: flat };
  return { code: Number(m[1]), enhanced: enhanced ?? findStatus(text), text: flat };
}

/**
 * Live SMTP reply or DSN Diagnostic-Code → reason and hard flag (command defaults to RCPT); `reason`: what the provider
 * registry said of it, if anything (kept as a notice's preset reason is).
 */
export function classifyReply(
  input: ReplyInput & { command?: string | null; reason?: BounceReason | null },
): ReplyClass {
  const r = classifyBounce({
    status: input.enhanced,
    replycode: input.code,
    diagnostic: input.text,
    command: input.command ?? 'RCPT',
    reason: input.reason,
    live: true,
  });
  return { reason: r.reason, hard: r.hard };
}

interface Ctx {
  status: string;
  reply: string;
  text: string;
  command: string;
  action: string;
  spec: string;
  preset: string;
  live: boolean;
  final: boolean;
}

/** Full reading of one bounced recipient, Sisimai-style. */
export function classifyBounce(f: BounceFacts): BounceReading {
  const text = (f.diagnostic ?? '').replace(/\s+/g, ' ').trim();
  const words = f.phrases ? f.phrases.replace(/\s+/g, ' ').trim() : text;
  const status = pickStatus(cleanStatus(f.status), text);
  const given = f.replycode != null && f.replycode !== '' ? String(f.replycode) : null;
  let replycode = given ?? findReply(text, status?.[0]);
  replycode ??= findReply(text);
  const ctx: Ctx = {
    status: status ?? '',
    reply: replycode ?? '',
    text: phraseText(words, readsAlone(words, status, f.spec) ? null : f.context, f.live === true),
    command: (f.command ?? '').toUpperCase(),
    action: (f.action ?? '').toLowerCase(),
    spec: diagnosticType(f.spec),
    preset: f.reason ?? '',
    live: f.live === true,
    final: f.final === true && !!f.reason,
  };
  const reason = decide(ctx);
  return finish(reason, status, replycode, text);
}

/**
 * A status that names its cause to the detail (x.y.z, y and z not 0: 4.4.4 "unable to route") is read with the
 * diagnostic's own text only, not the notice's words around it: a delay warning's "could not be delivered for 3
 * days" does not turn "454 4.4.4 no MX or A for domain" into `expired` (Sisimai's RFC 3464 decoder reads the
 * Diagnostic-Code alone there).
 */
/**
 * The diagnostic is read without the notice's words around it when its status names the cause to the detail, or when
 * it is the MTA's own words (a non-SMTP Diagnostic-Code: X-Postfix, X-Unix) that already name a reason: Postfix's
 * "X-Postfix; ... Command output: ..." of a delay warning reads `mailererror`, not the warning's `expired`.
 */
function readsAlone(text: string, status: string | null, spec: string | null | undefined): boolean {
  if (SPECIFIC_STATUS.test(status ?? '')) return true;
  if (/^smtp$/i.test(spec ?? 'SMTP') || !text) return false;
  const t = `${text.toLowerCase()} `;
  return [...RULES.keys()].some((r) => textMatches(r, t));
}

const SPECIFIC_STATUS = /^[45]\.[1-9]\.[1-9]/;

/**
 * The lower-case text phrases are read in: the diagnostic, after the notice's own words when given (go-sisimai). A
 * live reply's ends in a space, so a phrase ending in one ("blocked using ") matches at its end; a notice's does not,
 * as Sisimai::Fact sweeps the diagnostic before its phrases are read.
 */
function phraseText(text: string, context: string | null | undefined, live: boolean): string {
  const all = context ? `${context.replace(/\s+/g, ' ').trim()} ${text}`.trim() : text;
  if (!all) return '';
  return live ? `${all.toLowerCase()} ` : all.toLowerCase();
}

function finish(reason: BounceReason, status: string | null, replycode: string | null, text: string): BounceReading {
  if (NOT_BOUNCE.has(reason)) {
    return {
      reason,
      hard: null,
      status: reason === 'delivered' ? status : null,
      replycode: reason === 'delivered' ? replycode : null,
    };
  }
  const temporary = isTemporary(status, replycode, text, reason);
  const finalStatus = status ?? pseudoStatus(reason, temporary);
  const hard = isHard(reason, replycode, finalStatus);
  const code = replycode && finalStatus && replycode[0] !== finalStatus[0] ? null : replycode;
  return { reason, hard, status: finalStatus, replycode: code };
}

function cleanStatus(s: string | null | undefined): string | null {
  const m = /([245])\.(\d{1,3})\.(\d{1,3})/.exec(s ?? '');
  return m ? `${m[1]}.${Number(m[2])}.${Number(m[3])}` : null;
}

function pickStatus(given: string | null, text: string): string | null {
  // "4.4.7 Message expired ... <421 4.4.2 Connection timed out>": the last remote reply is the cause.
  const nested = /<[245]\d\d[- ]([245]\.\d\.\d{1,3})\b[^<>]*>/.exec(text)?.[1] ?? null;
  if (nested && given && /^[45]\.4\.7$/.test(given) && nested[0] === given[0]) return nested;
  // the first status of the text, as Sisimai's SMTP::Status->find reads it (x.0.0 and 4.4.7 only when alone)
  const found = findStatus(text);
  if (found && /^[45]\.[1-9]\.[1-9]\d*$/.test(found) && (!given || given[0] === found[0])) return found;
  if (!given) return found;
  if (given.endsWith('.0.0') && found && !found.endsWith('.0.0') && found[0] === given[0]) return found;
  return given;
}

function isTemporary(status: string | null, reply: string | null, text: string, reason: BounceReason): boolean {
  const s = status ?? findStatus(text);
  if (s) return s[0] === '4';
  if (reply) return reply[0] === '4';
  if (/\btemporar|\bpersistent/i.test(text)) return true;
  if (/\bpermanent/i.test(text)) return false;
  return reason === 'expired';
}

function decide(c: Ctx): BounceReason {
  if (c.preset && (c.final || !RETRY_REASONS.has(c.preset))) return c.preset as BounceReason;
  if (c.status.startsWith('2.')) return 'delivered';
  if (c.spec === 'SMTP') {
    for (const r of c.live ? PRIMARY_ORDER : NOTICE_PRIMARY_ORDER) if (probe(r, c)) return r;
  }
  const other = anotherOne(c);
  if (other && other !== 'undefined') return other;
  if (c.action === 'delayed') return 'expired';
  if (has(c, 'vacation')) return 'vacation';
  return c.text ? 'onhold' : 'undefined';
}

function anotherOne(c: Ctx): BounceReason | '' {
  if (isExplicit(c.preset)) return c.preset as BounceReason;
  const byStatus = byName(c);
  if (byStatus && !RETRY_REASONS.has(byStatus) && c.spec === 'SMTP') return byStatus;
  for (const r of FALLBACK_ORDER) if (has(c, r)) return r;
  if (byStatus) return byStatus;
  const subject = c.status.slice(0, 3);
  if (subject === '5.6' || subject === '4.6') return 'contenterror';
  if (subject === '5.7' || subject === '4.7') return 'securityerror';
  if (c.spec.startsWith('X-UNIX')) return 'mailererror';
  const n = Number(c.reply);
  if ((n > 400 && n < 408) || (n > 500 && n < 508)) return 'syntaxerror';
  if (c.action === 'delayed' || c.action === 'expired') return 'expired';
  if (c.command === 'EHLO' || c.command === 'HELO') return 'blocked';
  // a live reply only (not Sisimai's: no reason for 5.5.x there): a protocol error, after a greeting-time rejection
  if (c.live && subject === '5.5') return 'syntaxerror';
  return '';
}

/**
 * A notice's primary pass is Sisimai 5.1.0's (Reason.pm's first ClassOrder): no contenterror, whose true() returns
 * nothing there (go-sisimai's has one); a content error is read by the fallback lists and the x.6 status class.
 */
const NOTICE_PRIMARY_ORDER = PRIMARY_ORDER.filter((r) => r !== 'contenterror');
/** Status codes a notice reads as Sisimai 5.1.0's SMTP::Status names them, where the live table differs. */
const NOTICE_STATUS: Readonly<Record<string, BounceReason>> = { '5.7.30': 'securityerror' };
const byName = (c: Ctx): BounceReason | '' =>
  (c.live ? undefined : NOTICE_STATUS[c.status]) ?? STATUS_REASONS[c.status] ?? '';
const has = (c: Ctx, reason: BounceReason): boolean => textMatches(reason, c.text, c.live);

type Probe = (c: Ctx) => boolean;
const PROBES: Partial<Record<BounceReason, Probe>> = {
  mesgtoobig: (c) => byName(c) === 'mesgtoobig' || (byName(c) !== 'exceedlimit' && has(c, 'mesgtoobig')),
  suspend: (c) => c.reply === '525' || has(c, 'suspend'),
  hasmoved: (c) => has(c, 'hasmoved'),
  norelaying: (c) => !['CONN', 'EHLO', 'HELO'].includes(c.command) && has(c, 'norelaying'),
  userunknown: probeUserUnknown,
  filtered: probeFiltered,
  notcompliantrfc: (c) => has(c, 'notcompliantrfc'),
  badreputation: (c) => has(c, 'badreputation'),
  contenterror: (c) => !probeSpam(c) && (byName(c) === 'contenterror' || has(c, 'contenterror')),
  rejected: probeRejected,
  hostunknown: (c) => (byName(c) === 'hostunknown' ? !has(c, 'networkerror') : has(c, 'hostunknown')),
  spamdetected: probeSpam,
  speeding: (c) => has(c, 'speeding'),
};

/**
 * Reasons Sisimai's primary pass never gives a recipient without a status (their true() returns at once when the
 * deliverystatus is empty): a "full mailbox" text with no status is read further down the order.
 */
const NEED_STATUS: ReadonlySet<BounceReason> = new Set(['mailboxfull', 'exceedlimit', 'suspend', 'speeding']);

function probe(reason: BounceReason, c: Ctx): boolean {
  if (c.preset === reason) return true;
  if (NEED_STATUS.has(reason) && !c.status && !isExplicit(c.preset)) return false;
  const special = PROBES[reason];
  if (special) return special(c);
  return byName(c) === reason || has(c, reason);
}

function probeUserUnknown(c: Ctx): boolean {
  const name = byName(c);
  if (name === 'suspend') return false;
  if (name === 'userunknown') {
    const others: BounceReason[] = ['norelaying', 'blocked', 'mailboxfull', 'hasmoved', 'rejected', 'notaccept'];
    return !others.some((r) => has(c, r));
  }
  return c.command === 'RCPT' && has(c, 'userunknown');
}

function probeFiltered(c: Ctx): boolean {
  const name = byName(c);
  if (name === 'suspend') return false;
  if (name === 'filtered') return has(c, 'userunknown') || has(c, 'filtered');
  if (EXCEPT_DATA.has(c.command)) return false;
  return has(c, 'filtered') || has(c, 'userunknown');
}

function probeRejected(c: Ctx): boolean {
  const name = byName(c) || 'undefined';
  if (name === 'rejected') return true;
  if (c.command === 'MAIL') return has(c, 'rejected');
  if (c.command === 'DATA' && name !== 'userunknown') return has(c, 'rejected');
  if (!isExplicit(name) || name === 'securityerror' || name === 'systemerror') return has(c, 'rejected');
  return false;
}

function probeSpam(c: Ctx): boolean {
  // Sisimai gives a notice's retry-class reason its pseudo status before reading again; no status and no reason: no.
  if (!c.status && !isExplicit(c.preset)) return false;
  if (byName(c) === 'spamdetected') return true;
  if (EXCEPT_DATA.has(c.command)) return false;
  return has(c, 'spamdetected');
}

/** The Diagnostic-Code type as Sisimai reads it: Postfix's own "X-Postfix" counts as SMTP (its Postfix decoder). */
function diagnosticType(spec: string | null | undefined): string {
  const type = (spec ?? 'SMTP').toUpperCase() || 'SMTP';
  return type === 'X-POSTFIX' ? 'SMTP' : type;
}
