// The parsed inbound report (a DSN/NDR, an ARF complaint or anything else) as inbound/parse.ts produces
// it and services/feedback.ts consumes it. Types only; the parser is passed in as a ReportParser.
import type { BounceReason } from './bounce-reasons.js';

export type Action = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded' | null;
export interface ReportRecipient {
  address: string | null;
  status: string | null;
  action: Action;
  reason: BounceReason;
  hard: boolean | null;
  diagnostic: string | null;
  replycode?: string | null;
  feedback_type?: string | null;
  /** the mailbox provider that answered (google, microsoft, yahoo, apple, ...; src/core/providers/brands.ts), or null */
  provider?: string | null;
  /** DSN Original-Recipient, when it names another address than `address` (Final-Recipient). */
  original_recipient?: string;
}
/** Facts about the returned original message. */
export interface OriginalInfo {
  message_id: string | null;
  email_id: string | null;
  return_path: string | null;
  from?: string | null;
}
export interface Report {
  kind: 'dsn' | 'arf' | 'other';
  recipients: ReportRecipient[];
  original: OriginalInfo;
  /** set when the message could not be read (parse-pool.ts): over the time budget, or the parser failed */
  error?: 'timeout' | 'failed';
}
/** The parsed report type under the name other modules know it by. */
export type ParsedReport = Report;
/** Reads one raw message into a Report; never rejects on malformed input. */
export type ReportParser = (raw: Buffer) => Promise<Report>;
