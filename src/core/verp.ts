// VERP return-path tokens: `bounces+<token>@<domain>` where the token names the email and the
// delivery (recipient) and carries a 64-bit HMAC (core/signed-token, purpose `verp`), so a forged bounce is recognised. Pure.
import { TokenSigner } from './signed-token.js';

/**
 * The MAC is 16 hex chars = 64 bits. Only this length is accepted (tokens of the earlier 10-char MAC
 * are refused: accepting both would leave the 40-bit-shorter MAC forgeable).
 */
const signer = (secret: Buffer) => new TokenSigner('verp', secret);

/** Token for an email id (em_…) and a delivery id; lower-case, safe in a local part. */
export function verpToken(secret: Buffer, emailId: string, deliveryId: number): string {
  const payload = `${emailId.slice(3)}-${deliveryId.toString(36)}`;
  return `${payload}-${signer(secret).mac(payload)}`;
}

export function verpAddress(secret: Buffer, emailId: string, deliveryId: number, domain: string): string {
  return `bounces+${verpToken(secret, emailId, deliveryId)}@${domain}`;
}

/** Reads a VERP address (or its local part); null when it is not ours or its HMAC is wrong. */
export function readVerp(secret: Buffer, address: string): { emailId: string; deliveryId: number } | null {
  const local = address.trim().replace(/^<|>$/g, '').split('@')[0].toLowerCase();
  const m = /^bounces\+([0-9a-z]{26})-([0-9a-z]{1,12})-([0-9a-f]{16})$/.exec(local);
  if (!m || !signer(secret).verify(`${m[1]}-${m[2]}`, m[3])) return null;
  return { emailId: `em_${m[1]}`, deliveryId: parseInt(m[2], 36) };
}
