// Finds the email a report is about (VERP token from RCPT, then the VERP address the report carries,
// then our email id in the original Message-ID) and pairs each reported recipient with a delivery.
import { readVerp } from '../core/verp.js';
import { secret } from '../store/settings.js';
import { emailByPublicId, deliveriesOf, type DeliveryRow, type EmailRow } from '../store/emails.js';
import type { Report, ReportRecipient } from '../inbound/parse.js';
import type { Ctx } from './context.js';

export type MatchedBy = 'rcpt' | 'return_path' | 'message_id';
export interface EmailMatch { email: EmailRow; by: MatchedBy; verified: boolean }
/** `exact`: the report names the delivery's address (else it fell back to the email's only delivery). */
export interface RecipientMatch { recipient: ReportRecipient; delivery: DeliveryRow | null; exact: boolean }

function byToken(ctx: Ctx, address: string | null, key: Buffer): EmailRow | null {
  const t = address ? readVerp(key, address) : null;
  return t ? emailByPublicId(ctx.db, t.emailId) ?? null : null;
}

/** The email named by the report, most trustworthy source first; null when nothing matches. */
export function findEmail(ctx: Ctx, report: Report, rcptTo: readonly string[]): EmailMatch | null {
  const key = secret(ctx.db, 'verp');
  for (const a of rcptTo) {
    const email = byToken(ctx, a, key);
    if (email) return { email, by: 'rcpt', verified: true };
  }
  const viaReturnPath = byToken(ctx, report.original.return_path, key);
  if (viaReturnPath) return { email: viaReturnPath, by: 'return_path', verified: true };
  const id = report.original.email_id;
  const email = id ? emailByPublicId(ctx.db, id.toLowerCase()) : undefined;
  return email ? { email, by: 'message_id', verified: false } : null;
}

/**
 * Pairs reported recipients with the email's deliveries by address (case-insensitive). A recipient
 * the report does not name usably (redacted, rewritten) falls back to the email's only delivery, when
 * it has one and the match is HMAC-verified or the report is a complaint; otherwise it stays unmatched.
 */
export function matchRecipients(ctx: Ctx, m: EmailMatch, report: Report): RecipientMatch[] {
  const deliveries = deliveriesOf(ctx.db, m.email.seq);
  const byAddress = new Map(deliveries.map((d) => [d.recipient.toLowerCase(), d]));
  const fallback = deliveries.length === 1 && (m.verified || report.kind === 'arf') ? deliveries[0] : null;
  // Exact address matches first, so the fallback never takes a delivery that a later line names.
  const named = report.recipients.map((r) => (r.address ? byAddress.get(r.address.toLowerCase()) : undefined));
  const seen = new Set(named.filter((d) => d !== undefined).map((d) => d!.id));
  const taken = new Set<number>();
  return report.recipients.map((recipient, i) => {
    const d = named[i];
    if (d) return { recipient, delivery: taken.has(d.id) ? null : (taken.add(d.id), d), exact: true };
    const delivery = fallback && !seen.has(fallback.id) ? fallback : null;
    if (delivery) seen.add(delivery.id);
    return { recipient, delivery, exact: false };
  });
}
