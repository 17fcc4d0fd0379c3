// Engagement tracking: rewrites an email's html for open and click tracking (signed tokens).
// Placeholder: the webhooks feature implements it; until then html is returned unchanged.
import type { EmailRow } from '../store/emails.js';
import type { Ctx } from './context.js';

export function applyTracking(_ctx: Ctx, _email: EmailRow, html: string): string {
  return html;
}
