// Standard Webhooks signing: secrets are `whsec_` + base64 key; a signature is
// `v1,` + base64 HMAC-SHA256 of "id.timestamp.body", several separated by spaces. Pure (node:crypto only).
import { createHmac, randomBytes } from 'node:crypto';

export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export function signature(secret: string, id: string, timestampSec: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSec}.${body}`).digest('base64')}`;
}

/** The three headers of one delivery, signed with every given secret (current first). */
export function signedHeaders(
  secrets: readonly string[],
  id: string,
  nowMs: number,
  body: string,
): Record<string, string> {
  const ts = Math.floor(nowMs / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': secrets.map((s) => signature(s, id, ts, body)).join(' '),
  };
}
