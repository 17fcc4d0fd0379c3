// RCPT policy of the inbound listener: accepts VERP addresses with a valid HMAC on a bounce domain
// (MTA_BOUNCE_DOMAIN or a team domain's return-path name), fbl@ and dmarc@ (dmarc+anything@) <bounce domain>,
// postmaster@ and abuse@ at MTA_HOSTNAME and the bounce domain (RFC 5321 §4.5.1; a bare <postmaster> too), any
// local part at a team's receiving domain (docs/receiving.md); refuses the rest.
import { isBounceDomain, readVerpAddress } from '../services/bounce-addresses.js';
import type { Ctx } from '../services/context.js';
import { receivingDomainOf } from '../services/receiving.js';

export type RcptDecision =
  | { ok: true; kind: 'verp'; emailId: string; deliveryId: number }
  | { ok: true; kind: 'fbl' }
  | { ok: true; kind: 'dmarc' }
  | { ok: true; kind: 'postmaster' }
  | { ok: true; kind: 'receiving' }
  | { ok: false; code: number; message: string };

const REFUSED: RcptDecision = {
  ok: false,
  code: 550,
  message: '5.7.1 Relaying denied: not a recipient of this server',
};
const FORGED: RcptDecision = { ok: false, code: 550, message: '5.7.1 Unknown or invalid return address' };

function split(address: string): { local: string; domain: string } | null {
  const a = address.trim().replace(/^<|>$/g, '').toLowerCase();
  const at = a.lastIndexOf('@');
  if (at <= 0 || at === a.length - 1) return null;
  return { local: a.slice(0, at), domain: a.slice(at + 1).replace(/\.$/, '') };
}

/** Decides one RCPT TO address. Never a relay: anything not ours is refused with 550 5.7.1. */
export async function decideRecipient(ctx: Pick<Ctx, 'db' | 'config'>, address: string): Promise<RcptDecision> {
  if (/^<?postmaster>?$/i.test(address.trim())) return { ok: true, kind: 'postmaster' };
  const a = split(address);
  if (!a) return REFUSED;
  const ours = a.domain === ctx.config.bounceDomain.toLowerCase();
  if ((a.local === 'postmaster' || a.local === 'abuse') && (ours || a.domain === ctx.config.hostname.toLowerCase()))
    return { ok: true, kind: 'postmaster' };
  if (a.local === 'fbl' && ours) return { ok: true, kind: 'fbl' };
  if ((a.local === 'dmarc' || a.local.startsWith('dmarc+')) && ours) return { ok: true, kind: 'dmarc' };
  const bounce = a.local.startsWith('bounces+') && (await isBounceDomain(ctx, a.domain));
  if (!bounce) return (await receivingDomainOf(ctx, a.domain)) ? { ok: true, kind: 'receiving' } : REFUSED;
  const token = await readVerpAddress(ctx, a.local);
  return token ? { ok: true, kind: 'verp', ...token } : FORGED;
}
