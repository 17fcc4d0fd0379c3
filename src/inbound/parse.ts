// parseReport(raw): reads a DSN/NDR, an ARF complaint or an auto-reply into a Report (one entry per
// recipient, Sisimai-compatible reason/status/hard). Never throws on malformed input; no I/O.
// The readers: other-reports.ts (complaints, SES events, auto-replies), bounce-report.ts (DSNs and notices),
// recipient-reading.ts (one recipient's reason, status and hard flag).
import { TEXT_CAP, parseEntity } from './mime.js';
import { bounceReport } from './bounce-report.js';
import { complaintReport, emptyReport, sesReport, vacationReport } from './other-reports.js';
import type { Report } from '../core/report.js';

export type { Action, Report, ReportRecipient, ParsedReport } from '../core/report.js';
export { TEXT_CAP } from './mime.js';
export { unfoldReply } from './recipient-reading.js';

export async function parseReport(raw: Buffer | string): Promise<Report> {
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
  const text = bytes.subarray(0, TEXT_CAP).toString('latin1');
  const reports = mboxMessages(text).map(readOne);
  const first = reports.find((r) => r.recipients.length) ?? (reports[0] as Report);
  if (reports.length === 1) return first;
  // An mbox of several notices (Sisimai reads each message): one report with every message's recipients.
  return { kind: first.kind, recipients: reports.flatMap((r) => r.recipients), original: first.original };
}

function readOne(text: string): Report {
  const root = parseEntity(text);
  return complaintReport(root) ?? sesReport(root) ?? bounceReport(root) ?? vacationReport(root) ?? emptyReport(root);
}

/**
 * Splits an mbox ("From " separator lines before header blocks) into messages; anything else is one message.
 * Like Sisimai's Mail::Mbox, the separator need not follow a blank line (it may follow a closing MIME boundary).
 */
function mboxMessages(text: string): string[] {
  if (!text.startsWith('From ')) return [text];
  const starts = [...text.matchAll(/(?<=\n)From \S+ [^\n]*\d{4}\r?\n(?=[\w-]+:)/g)].map((m) => m.index as number);
  if (!starts.length) return [text];
  return [0, ...starts].map((at, i, all) => text.slice(at, all[i + 1] ?? text.length));
}
