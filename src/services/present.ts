// Presenters: store rows → the API objects of interface.md / decisions.md. Pure mapping.
import type { EmailHead } from '../store/emails.js';
import type { EventRow } from '../store/events.js';
import type { SuppressionRow } from '../store/suppressions.js';
import type { KeyRow } from '../store/teams.js';
import type { AttachmentInfo } from './attachments.js';

export const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();
const arr = (json: string | null) => (json === null ? null : (JSON.parse(json) as string[]));

export function presentEmail(e: EmailHead) {
  return {
    object: 'email' as const,
    id: e.id,
    from: e.from_addr,
    to: arr(e.to_json)!,
    cc: arr(e.cc_json),
    bcc: arr(e.bcc_json),
    reply_to: e.reply_to,
    subject: e.subject,
    status: e.status,
    test_mode: e.test_mode === 1,
    tags: arr(e.tags_json),
    credits_charged: e.credits_charged,
    scheduled_at: iso(e.scheduled_at),
    tracking: { opens: e.tracking_opens === 1, clicks: e.tracking_clicks === 1 },
    attachments: (e.attachments_json === null ? [] : JSON.parse(e.attachments_json)) as AttachmentInfo[],
    content_expired_at: iso(e.content_expired_at),
    created_at: iso(e.created_at)!,
  };
}
export type Email = ReturnType<typeof presentEmail>;

export function presentEvent(ev: EventRow) {
  return {
    object: 'event' as const,
    id: ev.id,
    type: ev.type,
    recipient: ev.recipient,
    created_at: iso(ev.created_at)!,
    data: JSON.parse(ev.data_json) as Record<string, unknown>,
  };
}

export function presentSuppression(s: SuppressionRow) {
  return {
    object: 'suppression' as const,
    address: s.address,
    reason: s.reason,
    email_id: s.email_id,
    created_at: iso(s.created_at)!,
  };
}

export function presentKey(k: KeyRow, fullKey?: string) {
  return {
    object: 'api_key' as const,
    id: k.id,
    name: k.name,
    mode: k.mode,
    scopes: k.scopes.split(' '),
    ...(fullKey ? { key: fullKey } : {}),
    prefix: k.prefix,
    created_at: iso(k.created_at)!,
    last_used_at: iso(k.last_used_at),
    revoked_at: iso(k.revoked_at),
  };
}
