// readSesNotification(root): Amazon SES event notifications mailed as JSON (directly or wrapped in an SNS
// "Notification" envelope) → bounced/delivered recipients or complaint addresses. Pure; null when not one.
import { findAddress } from '../core/address.js';
import type { RawRecipient } from './dsn.js';
import { type Entity, header, leaves } from './mime.js';

export interface SesNotification {
  type: 'bounce' | 'delivery' | 'complaint';
  recipients: RawRecipient[];
  feedbackType: string | null;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : null);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

/** The first balanced {...} in the text (string-aware), with line breaks removed (folded JSON lines). */
function firstObject(text: string): Json | null {
  const start = text.indexOf('{');
  if (start < 0) return null;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) {
      try {
        return obj(JSON.parse(text.slice(start, i + 1).replace(/\r?\n/g, '')));
      } catch {
        return null;
      }
    }
  }
  return null;
}

function looksLikeSes(root: Entity): boolean {
  const from = (header(root.headers, 'from') ?? '').toLowerCase();
  return (
    !!header(root.headers, 'x-amz-sns-message-id') ||
    from.includes('@sns.amazonaws.com') ||
    /amazonses\.com/i.test(header(root.headers, 'feedback-id') ?? '')
  );
}

function smtpText(v: unknown): string | null {
  const s = str(v);
  return s ? s.replace(/^\s*smtp;\s*/i, '') : null;
}

export function readSesNotification(root: Entity): SesNotification | null {
  if (!looksLikeSes(root)) return null;
  const part = leaves(root).find((p) => p.type.startsWith('text/plain')) ?? root;
  let event = firstObject(part.text);
  const wrapped = str(event?.Message);
  if (event && str(event.Type) === 'Notification' && wrapped) {
    try {
      event = obj(JSON.parse(wrapped.replace(/\r?\n/g, '')));
    } catch {
      return null;
    }
  }
  const kind = str(event?.notificationType ?? event?.eventType)?.toLowerCase();
  if (!event || !kind) return null;
  if (kind === 'bounce') {
    const b = obj(event.bounce);
    const recipients = list(b?.bouncedRecipients)
      .map(obj)
      .filter((r): r is Json => !!r)
      .map((r): RawRecipient => ({
        address: findAddress(str(r.emailAddress)),
        status: str(r.status),
        action: str(r.action) ?? 'failed',
        diagnostic: smtpText(r.diagnosticCode),
        spec: 'SMTP',
        replycode: null,
        command: null,
      }));
    return recipients.length ? { type: 'bounce', recipients, feedbackType: null } : null;
  }
  if (kind === 'delivery') {
    const d = obj(event.delivery);
    const response = smtpText(d?.smtpResponse);
    const recipients = list(d?.recipients)
      .map((a) => findAddress(str(a)))
      .filter((a): a is string => !!a)
      .map((a): RawRecipient => ({
        address: a,
        status: null,
        action: 'delivered',
        diagnostic: response,
        spec: 'SMTP',
        replycode: null,
        command: null,
      }));
    return recipients.length ? { type: 'delivery', recipients, feedbackType: null } : null;
  }
  if (kind === 'complaint') {
    const c = obj(event.complaint);
    const recipients = list(c?.complainedRecipients)
      .map(obj)
      .map((r) => findAddress(str(r?.emailAddress)))
      .filter((a): a is string => !!a)
      .map((a): RawRecipient => ({
        address: a,
        status: null,
        action: null,
        diagnostic: null,
        spec: null,
        replycode: null,
        command: null,
      }));
    return recipients.length ? { type: 'complaint', recipients, feedbackType: str(c?.complaintFeedbackType) } : null;
  }
  return null;
}
