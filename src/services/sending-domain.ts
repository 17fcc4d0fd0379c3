// Which of a team's domains may send for an address domain (live mode), and the DKIM key and
// return-path it signs and bounces with. Rule (docs/decisions.md): the exact domain, or a verified
// parent domain (relaxed DKIM/DMARC alignment: d=example.com aligns with From: a@mail.example.com).
import { verifiedDomainNamed, verifiedEd25519Key, type SendingDomain } from '../store/domains.js';
import type { Ctx } from './context.js';

export type { SendingDomain };

export function verifiedDomainFor(ctx: Pick<Ctx, 'db'>, teamId: string, addressDomain: string): SendingDomain | null {
  const labels = addressDomain.toLowerCase().split('.');
  const candidates = labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
  for (const name of candidates) {
    const d = verifiedDomainNamed(ctx.db, teamId, name);
    if (d) return d;
  }
  return null;
}

/**
 * The DKIM signing parameters for a team's sender domain (its current key: during a rotation the
 * next key is not used until its record verifies), or null when it has no verified domain.
 * `ed25519` is the second key to sign with (RFC 8463), once its own record verified.
 */
export function signingKeyFor(ctx: Pick<Ctx, 'db'>, teamId: string, addressDomain: string) {
  const d = verifiedDomainFor(ctx, teamId, addressDomain);
  if (!d || !d.dkim_private_key) return null;
  const ed = verifiedEd25519Key(ctx.db, d.id);
  return {
    signingDomain: d.name,
    selector: d.dkim_selector,
    privateKey: d.dkim_private_key,
    returnPath: d.return_path_verified ? d.return_path : null,
    ed25519: ed ? { selector: ed.selector, privateKey: ed.private_key } : null,
  };
}
