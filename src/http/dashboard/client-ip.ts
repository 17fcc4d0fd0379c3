// The client address of a dashboard request: the socket's peer, or, when that peer is a trusted proxy
// (MTA_TRUSTED_PROXIES, default none), the nearest untrusted address in X-Forwarded-For.
import net from 'node:net';
import { isTrusted } from '../../config/proxies.js';

/**
 * Walks X-Forwarded-For from the right (the hop our proxy added) past trusted proxies; the first
 * address that is not one is the client. A malformed entry stops the walk at the last good hop.
 */
export function clientAddress(peer: string, forwardedFor: string | undefined, trusted: net.BlockList | null): string {
  if (!trusted || !forwardedFor || !isTrusted(trusted, peer)) return peer;
  const hops = forwardedFor
    .split(',')
    .map((h) => h.trim())
    .reverse();
  let client = peer;
  for (const hop of hops) {
    if (net.isIP(hop) === 0) break;
    client = hop;
    if (!isTrusted(trusted, hop)) break;
  }
  return client;
}
