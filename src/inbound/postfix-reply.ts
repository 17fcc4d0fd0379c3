// Sisimai's Postfix decoder (Perl and go-sisimai alike) keeps ONE alternative error from the notice's own text: the
// last "<rcpt>: ..." entry at the left margin, with its wrapped lines. Every recipient of the delivery-status part
// whose Status is generic (x.0.0, or none) takes that entry's status and reply code, whichever recipient it was
// written for. Pure functions.
import { findReply, findStatus } from '../core/classify.js';
import type { RawRecipient } from './dsn.js';

/** A Postfix entry's first line: "<a@b>: ..." at the left margin (Sisimai's aligned '<', '@', '>:'). */
const ENTRY = /^<[^<>\s@]*@[^<>\s]*>:/;

/**
 * The last "<a@b>: ..." entry of a Postfix notice's text, its wrapped lines joined: those indented by four spaces, and
 * any holding "(in reply to " or "command)"; null when there is none.
 */
export function lastPostfixEntry(section: string): string | null {
  let entry: string | null = null;
  for (const line of section.split('\n').slice(0, 2000)) {
    if (!line) continue;
    if (ENTRY.test(line)) entry = line.slice(line.indexOf('>:') + 2).trim();
    else if (entry !== null && (line.includes(' (in reply to ') || line.includes('command)'))) entry += ` ${line}`;
    else if (entry !== null && line.startsWith('    ')) entry += ` ${line.slice(4)}`;
  }
  return entry === null ? null : entry.replace(/\s+/g, ' ').trim();
}

const generic = (status: string | null) => !status || status.endsWith('.0.0');

/**
 * Gives every recipient with a generic Status the entry's detailed status and reply code, and the entry as its
 * diagnostic when the entry holds its Diagnostic-Code and gave one of those (Sisimai Lhost::Postfix, after its loop).
 */
export function shareLastEntry(raws: RawRecipient[], entry: string | null): void {
  if (!entry) return;
  for (const r of raws) {
    const d = (r.diagnostic ?? '').replace(/\s+/g, ' ').trim() || entry;
    r.diagnostic ||= entry;
    if (/^\d+$/.test(d)) {
      r.diagnostic = entry;
      continue;
    }
    const as = generic(r.status) ? (findStatus(entry) ?? '') : '';
    if (as && !as.endsWith('.0.0')) r.status = as;
    const ar = !r.replycode || r.replycode.endsWith('00') ? (findReply(entry) ?? '') : '';
    if (ar && !ar.endsWith('00')) r.replycode = ar;
    if ((as || ar) && entry.length >= d.length && entry.includes(d)) r.diagnostic = entry;
  }
}
