// Shapes of the provider registry's data (src/core/providers/index.ts): what a provider's entry may hold and
// what its host table reads. Types, and two small phrase-table helpers.
import type { BounceReason } from '../bounce-reasons.js';

/** What a host table reads: the reply text, the status and reply code, and where the reply came from. */
export interface ProviderInput {
  text: string;
  status: string | null;
  replycode: string | null;
  command?: string | null;
  /** Remote-MTA (or the "host X said" name) and the recipient's domain */
  rhost?: string | null;
  destination?: string | null;
  /** the host that wrote the report (Reporting-MTA): asked last, as Sisimai does */
  lhost?: string | null;
  /**
   * which Sisimai decoder reads the notice (a notice format's family, a GENERIC_LHOST_SIGNS family, or `generic` for its
   * RFC 3464 decoder); absent for a live reply
   */
  decoder?: string | null;
}

/**
 * Which reading an entry of a provider's table belongs to: `live` replies only (the reader's own or go-sisimai's
 * wording), or bounce `notice`s only (Sisimai 5.1.0's, the reference for notices); none: both.
 */
export type TableMode = 'live' | 'notice';

/** Whether an entry of `mode` is read for this input (a notice is one a decoder read). */
export function readsEntry(i: ProviderInput, mode?: TableMode): boolean {
  return !mode || (mode === 'notice') === !!i.decoder;
}

/** Phrases → reason, tried in order; the first reason one of whose phrases occurs wins. */
export type Phrases = readonly (readonly [BounceReason, readonly string[]])[];

/** A provider's own code in a reply, or its phrases gated on its host, read in any notice (Sisimai Rhost tables). */
export interface CodeRule {
  name: string;
  /** the provider's own code in the reply; capture 1 is looked up in `codes`, then in `ranges` */
  code?: RegExp;
  codes?: Readonly<Record<string, BounceReason>>;
  ranges?: readonly [number, number, BounceReason][];
  /** lower-case phrases, only when `gate` (the provider's host or help URL) occurs in the text or the remote host */
  gate?: RegExp;
  phrases?: readonly { reason: BounceReason; includes: readonly string[] }[];
}

/** How an MTA's or provider's own notice is recognised and read (Sisimai Lhost modules). */
export interface NoticeFormat {
  family: string;
  /** each test that passes counts one; the format applies when `need` (default 1) of them pass */
  detect: {
    from?: RegExp;
    subject?: RegExp;
    messageId?: RegExp;
    received?: RegExp;
    body?: RegExp;
    headers?: readonly string[];
    replyTo?: RegExp;
    contentType?: RegExp;
    xMailer?: RegExp;
  };
  need?: number;
  /** lines of its notice that name a recipient (capture 1); when set, the generic recipient lines are not tried */
  recipientLines?: readonly RegExp[];
  /** lines that start the returned original message (the error block ends there) */
  end?: readonly RegExp[];
  /** only `end` ends the error block (the reader's usual markers, e.g. "The original message was", occur in it) */
  endsOnly?: boolean;
  /**
   * its notices are read from their text alone — a delivery-status part after it is not read — and a recipient's
   * error is its own "address: error" line, never the whole notice (OpenSMTPD's)
   */
  textOnly?: boolean;
  /** a recipient's error is its own paragraph, never the whole notice: a bare address line gives no cause (X3) */
  ownLine?: boolean;
  /**
   * the decoder reads a notice's text only from a line holding one of these on (Sisimai Exim's "startingof"): a
   * notice of the format with none of them (a provider's own template) gives only X-Failed-Recipients, no cause
   */
  startLines?: RegExp;
  /**
   * the decoder reads nothing without a line of this (its only opening line, Sisimai X2's "Unable to deliver message
   * to the following address"): a notice that passes the detection tests but holds none is not of the format (Sisimai's
   * decoder returns nothing and the next one, often the RFC 3464 decoder, reads it)
   */
  opens?: RegExp;
  /**
   * a lone recipient's error is every line after its "<address>:" line (qmail, Sisimai Lhost::qmail and X4), not
   * the whole notice: the preamble above it, however an ISP reworded it, names no cause (nothing after it: undefined)
   */
  linesAfter?: boolean;
  /**
   * its DSNs are read from their delivery-status part alone: the human-readable part (no vendor decoder reads it;
   * Sisimai's generic RFC 3464 decoder skips it) gives no diagnostic, so with no Diagnostic-Code the Status decides
   */
  statusOnly?: boolean;
  /**
   * The text's own error lines under a recipient replace its Diagnostic-Code when they contain it (Sisimai Exim: the
   * indented "host X [addr]\n    LMTP error after DATA: 450 ..." lines are read in full, not the DSN's "450 ...").
   */
  textHoldsDiagnostic?: boolean;
  /**
   * a recipient's line that names no cause (IMail's "undeliverable to a@b"): its diagnostic is only the remote
   * server's response the notice gives from the `response` marker on, else none (`undefined`), as Sisimai reads it
   */
  noCause?: { line: RegExp; response: string };
  /** phrases in the error text → reason (case-sensitive, as Sisimai matches them) */
  reasons?: readonly { reason: BounceReason; phrases: readonly string[] }[];
  /** enhanced status code → reason, applied before the phrases (Office 365) */
  statuses?: readonly [RegExp, BounceReason][];
  /** a header value that decides the reason before anything else (au/EZweb X-SPASIGN: NG → filtered) */
  headerReason?: { name: string; value: RegExp; reason: BounceReason };
  /** SMTP command → provisional reason (Exim: HELO blocked, MAIL onhold); with a bare reply code it fixes the pseudo status */
  commands?: Readonly<Record<string, BounceReason>>;
  /** reasons whose pseudo status is temporary when the notice has neither a status nor a reply code (Exim) */
  temporaryWithoutCode?: readonly BounceReason[];
}

/** One provider (or MTA family): everything the reader knows about its bounces. */
export interface Provider {
  name: string;
  /** host names that say the reply came from it: ".suffix" or an exact name (Sisimai Rhost::RhostClass) */
  hosts?: readonly string[];
  /** its own table, read when `hosts` name the remote host or the recipient's domain */
  byHost?: (i: ProviderInput) => BounceReason | null;
  /** its codes or host-gated phrases, read in every notice */
  codeRules?: readonly CodeRule[];
  /** the notices it sends */
  notices?: readonly NoticeFormat[];
  /** phrases of its own that mean one reason in the notices of the decoders named (lower-case), and in live replies */
  vendorPhrases?: VendorPhrases;
}

/** [reason, phrases, the decoders (notice format families, `generic`) whose notices they are read in]. */
export type VendorPhrases = readonly (readonly [BounceReason, readonly string[], readonly string[]])[];

/** Phrases in the shape of a notice's `reasons`. */
export function asReasons(p: Phrases): NonNullable<NoticeFormat['reasons']> {
  return p.map(([reason, phrases]) => ({ reason, phrases }));
}

/** The first reason of `table` one of whose phrases occurs in `text` (compared as given: lower-case the text first if needed). */
export function byPhrase(table: Phrases, text: string): BounceReason | null {
  return table.find(([, ps]) => ps.some((p) => text.includes(p)))?.[0] ?? null;
}
