// The TLS side of the SMTP client (smtp.ts): what a session's certificate says (chain and MX host name, read after
// the handshake, which never refuses one), and the verdict of a session that could not be set up with the TLS its
// send required (MTA-STS enforce: deferred 4.7.5 `mta_sts`, docs/outbound.md "Transport security").
import { checkServerIdentity, type TLSSocket } from 'node:tls';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import { socketOf } from '../lib/internals.js';
import { verdictOfReply, type Verdict } from './verdict.js';

/** A session's TLS: version, cipher, whether the certificate chains to a trusted CA and names the MX host, why not. */
export interface SessionTls {
  version: string | null;
  cipher: string | null;
  verified: boolean;
  error?: string;
}
/** What a send needs of a session: SendOptions.tls, or MTA_OUTBOUND_TLS=required. */
export type TlsWant = 'verified' | 'opportunistic' | 'off' | 'required';
/** The error code of a session whose certificate was not verified where verified TLS was required. */
export const UNVERIFIED = 'EUNVERIFIED';

type SetupError = Error & { code?: string; response?: string; command?: string };

/** A session that could not be set up: TLS it required (deferred; `mta_sts` when verified TLS was), else the reply. */
export function setupVerdict(e: SetupError, verified: boolean): Verdict {
  const tlsFailed = e.code === 'ETLS' || e.command === 'STARTTLS';
  if (verified && (tlsFailed || e.code === UNVERIFIED)) {
    const why = e.code === UNVERIFIED ? e.message : `STARTTLS required: ${e.message}`;
    return {
      kind: 'deferred',
      reply: null,
      command: 'STARTTLS',
      reason: 'mta_sts',
      enhanced: '4.7.5',
      error: `mta_sts: ${why}`,
    };
  }
  // TLS could not be set up (MTA_OUTBOUND_TLS=required and not offered, or a failed upgrade): retry later.
  if (tlsFailed)
    return {
      kind: 'deferred',
      reply: e.response ?? null,
      command: 'STARTTLS',
      error: `TLS required but not available: ${e.message}`,
    };
  return verdictOfReply(e.response, 'CONN', e.message);
}

/** The session's TLS: version, cipher, and whether the certificate chains to a trusted CA and names `host`. */
export function tlsInfo(conn: SMTPConnection, host: string): SessionTls | null {
  const sock = socketOf(conn) as TLSSocket | null;
  if (!conn.secure || !sock || typeof sock.getProtocol !== 'function') return null;
  const base = { version: sock.getProtocol(), cipher: sock.getCipher()?.name ?? null };
  // Node checks the name (servername) along with the chain, and says which failed.
  const err = sock.authorized
    ? null
    : String((sock.authorizationError as unknown as { code?: string })?.code ?? sock.authorizationError);
  if (err && err !== 'ERR_TLS_CERT_ALTNAME_INVALID')
    return { ...base, verified: false, error: `certificate not trusted: ${err}` };
  const wrongName = checkServerIdentity(host, sock.getPeerCertificate());
  if (wrongName) return { ...base, verified: false, error: `certificate not valid for ${host}: ${wrongName.message}` };
  return { ...base, verified: true };
}
