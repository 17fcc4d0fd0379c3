// Which of a team's domains may send for an address domain (live mode).
// Rule (docs/decisions.md): the exact domain, or a verified parent domain (relaxed DKIM/DMARC alignment).
import { sql } from '../store/db.js';
import type { Ctx } from './context.js';

export interface SendingDomain { id: string; name: string }

export function verifiedDomainFor(ctx: Ctx, teamId: string, addressDomain: string): SendingDomain | null {
  const labels = addressDomain.toLowerCase().split('.');
  const candidates = labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
  const stmt = sql<SendingDomain>(ctx.db, "SELECT id, name FROM domains WHERE team_id = ? AND name = ? AND status = 'verified'");
  for (const name of candidates) {
    const d = stmt.get(teamId, name);
    if (d) return d;
  }
  return null;
}
