// Finds the email and delivery a report is about (the HMAC-checked VERP token of the RCPT address, then
// the one the report carries, then our email id in the original Message-ID) and what it may touch.
import { readVerp } from '../core/verp.js';
import { secret } from '../store/settings.js';
import { emailByPublicId, deliveriesOf, type DeliveryRow, type EmailRow } from '../store/emails.js';
import type { Report, ReportRecipient } from '../core/report.js';
import type { Ctx } from './context.js';
import type { Gen } from '../store/op.js';

export type MatchedBy = 'rcpt' | 'return_path' | 'message_id';
/** `deliveryId`: the one delivery a verified VERP token names; null when matched by Message-ID only. */
export interface EmailMatch {
  email: EmailRow;
  by: MatchedBy;
  deliveryId: number | null;
}
/** `exact`: the report names the delivery's address (Final-Recipient or Original-Recipient). */
export interface RecipientMatch {
  recipient: ReportRecipient;
  delivery: DeliveryRow | null;
  exact: boolean;
}

function* byToken(ctx: Ctx, address: string | null, key: Buffer, by: MatchedBy): Gen<EmailMatch | null> {
  const t = address ? readVerp(key, address) : null;
  const email = t ? yield* emailByPublicId(ctx.db, t.emailId) : undefined;
  return email && t ? { email, by, deliveryId: t.deliveryId } : null;
}

/** The email named by the report, most trustworthy source first; null when nothing matches. */
export function* findEmail(ctx: Ctx, report: Report, rcptTo: readonly string[]): Gen<EmailMatch | null> {
  const key = yield* secret(ctx.db, 'verp');
  for (const a of rcptTo) {
    const m = yield* byToken(ctx, a, key, 'rcpt');
    if (m) return m;
  }
  const viaReturnPath = yield* byToken(ctx, report.original.return_path, key, 'return_path');
  if (viaReturnPath) return viaReturnPath;
  const id = report.original.email_id;
  const email = id ? yield* emailByPublicId(ctx.db, id.toLowerCase()) : undefined;
  return email ? { email, by: 'message_id', deliveryId: null } : null;
}

/** The addresses a reported recipient goes by, lower-cased. */
const names = (r: ReportRecipient): string[] =>
  [r.address, r.original_recipient].filter((a): a is string => !!a).map((a) => a.toLowerCase());

/**
 * Pairs reported recipients with deliveries; never more than once per delivery.
 * - Verified token: only its delivery. A recipient naming its address (exactly) wins; else one naming
 *   no address, or an address that is no recipient of the email (an alias or forward target: `exact`
 *   false, never suppresses). A recipient naming ANOTHER recipient of the email touches nothing.
 * - Message-ID only: nothing, unless `trusted` (a complaint signed by a listed feedback loop): then
 *   each recipient that names a delivery's address exactly.
 */
export function* matchRecipients(ctx: Ctx, m: EmailMatch, report: Report, trusted = false): Gen<RecipientMatch[]> {
  const deliveries = yield* deliveriesOf(ctx.db, m.email.seq);
  const none = report.recipients.map((recipient) => ({ recipient, delivery: null, exact: false }));
  if (m.deliveryId === null) return trusted ? byAddress(deliveries, report, none) : none;
  const d = deliveries.find((x) => x.id === m.deliveryId);
  if (!d) return none;
  const own = d.recipient.toLowerCase();
  const others = new Set(deliveries.filter((x) => x.id !== d.id).map((x) => x.recipient.toLowerCase()));
  const rank = (r: ReportRecipient): number => {
    const n = names(r);
    if (n.includes(own)) return 0;
    if (n.some((a) => others.has(a))) return -1;
    return n.length === 0 ? 1 : 2;
  };
  const ranks = report.recipients.map(rank);
  const best = ranks.reduce<number>((b, x, i) => (x >= 0 && (b < 0 || x < ranks[b]) ? i : b), -1);
  return none.map((p, i) => (i === best ? { ...p, delivery: d, exact: ranks[i] === 0 } : p));
}

function byAddress(deliveries: DeliveryRow[], report: Report, none: RecipientMatch[]): RecipientMatch[] {
  const index = new Map(deliveries.map((d) => [d.recipient.toLowerCase(), d]));
  const taken = new Set<number>();
  return none.map((p) => {
    const d = names(p.recipient)
      .map((a) => index.get(a))
      .find((x) => x !== undefined);
    if (!d || taken.has(d.id)) return p;
    taken.add(d.id);
    return { ...p, delivery: d, exact: true };
  });
}
