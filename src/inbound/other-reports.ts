// Reports that are not bounces: ARF complaints, Amazon SES JSON events, auto-replies (and the empty report). Pure.
import { type Entity, decodeWords, header } from './mime.js';
import { findAddress } from '../core/address.js';
import { readComplaint } from './arf.js';
import { readOriginal } from './original.js';
import { readSesNotification } from './ses-json.js';
import { toRecipient } from './recipient-reading.js';
import type { Report, ReportRecipient } from '../core/report.js';

/** A recipient who complained (ARF, an SES complaint event). */
const complained = (address: string | null, feedbackType: string | null): ReportRecipient => ({
  address,
  status: null,
  action: null,
  reason: 'feedback',
  hard: null,
  diagnostic: null,
  replycode: null,
  feedback_type: feedbackType,
});

export function complaintReport(root: Entity): Report | null {
  const c = readComplaint(root);
  if (!c) return null;
  const recipients = c.addresses.map((address) => complained(address, c.feedbackType));
  return { kind: 'arf', recipients, original: readOriginal(root) };
}

/** Amazon SES JSON event notification (bounce, delivery, complaint). */
export function sesReport(root: Entity): Report | null {
  const ses = readSesNotification(root);
  if (!ses) return null;
  const original = readOriginal(root);
  if (ses.type === 'complaint') {
    const recipients = ses.recipients.map((r) => complained(r.address, ses.feedbackType ?? 'abuse'));
    return { kind: 'arf', recipients, original };
  }
  return { kind: 'dsn', recipients: ses.recipients.map(toRecipient), original };
}

function isAutoReply(root: Entity): boolean {
  const h = root.headers;
  const auto = (header(h, 'auto-submitted') ?? '').toLowerCase();
  const subject = decodeWords(header(h, 'subject') ?? '').toLowerCase();
  const from = (header(h, 'from') ?? '').toLowerCase();
  if (/mailer-daemon|postmaster/.test(from)) return false;
  return (
    auto.startsWith('auto-replied') ||
    !!header(h, 'x-autoreply') ||
    !!header(h, 'x-autorespond') ||
    (header(h, 'precedence') ?? '').toLowerCase() === 'auto_reply' ||
    /^(?:auto(?:matic)? ?reply|out of (?:the )?office|away|vacation|abwesend|auto:)/.test(subject)
  );
}
export function vacationReport(root: Entity): Report | null {
  if (!isAutoReply(root)) return null;
  const address = findAddress(header(root.headers, 'from'));
  return {
    kind: 'other',
    recipients: [
      { address, status: null, action: null, reason: 'vacation', hard: null, diagnostic: null, replycode: null },
    ],
    original: readOriginal(root),
  };
}
export function emptyReport(root: Entity): Report {
  return { kind: 'other', recipients: [], original: readOriginal(root) };
}
