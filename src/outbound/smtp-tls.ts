// The TLS side of the SMTP client (smtp.ts): what a session's certificate says (chain and MX host name, or the MX
// host's DANE TLSA records; read after the handshake, which never refuses one), and the verdict of a session that
// could not be set up with the TLS its send required (MTA-STS enforce: deferred 4.7.5 `mta_sts`; DANE: 4.7.5 `dane`;
// docs/outbound.md "Transport security").
import { checkServerIdentity, type DetailedPeerCertificate, type TLSSocket } from 'node:tls';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import { socketOf } from '../lib/internals.js';
import { verdictOfReply, type Verdict } from './verdict.js';
import { daneVerify, type DaneResultType, type Tlsa } from '../core/dane.js';

/** A session's TLS: version, cipher, whether the certificate chains to a trusted CA and names the MX host, why not. */
export interface SessionTls {
  version: string | null;
  cipher: string | null;
  verified: boolean;
  error?: string;
  /** DANE: the RFC 8460 result type of a failure */
  result_type?: DaneResultType;
}
/** What a send needs of a session: SendOptions.tls, or MTA_OUTBOUND_TLS=required. */
export type TlsWant = 'verified' | 'opportunistic' | 'off' | 'required' | 'dane';
/** A DANE send's MX host: its usable TLSA records (none: TLS required, not authenticated) and the names to check. */
export interface DaneWant {
  records: Tlsa[];
  names: string[];
}
/** The sessions a DANE send may ride on: those that satisfied the same records for the same names. */
export const daneKey = (d: DaneWant) => JSON.stringify([d.records, d.names]);
/** The error code of a session whose certificate was not verified where verified TLS was required. */
export const UNVERIFIED = 'EUNVERIFIED';

type SetupError = Error & { code?: string; response?: string; command?: string };

/** A session that could not be set up: TLS it required (deferred `mta_sts` or `dane` 4.7.5), else the reply. */
export function setupVerdict(e: SetupError, want: TlsWant): Verdict {
  const tlsFailed = e.code === 'ETLS' || e.command === 'STARTTLS';
  if ((want === 'verified' || want === 'dane') && (tlsFailed || e.code === UNVERIFIED)) {
    const reason = want === 'dane' ? 'dane' : 'mta_sts';
    const why = e.code === UNVERIFIED ? e.message : `STARTTLS required: ${e.message}`;
    return {
      kind: 'deferred',
      reply: null,
      command: 'STARTTLS',
      reason,
      enhanced: '4.7.5',
      error: why.startsWith(`${reason}:`) ? why : `${reason}: ${why}`,
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

/** What a session that could not be set up tells of its TLS (the refused certificate's; DANE: no STARTTLS). */
export function setupTls(e: SetupError & { tls?: SessionTls }, want: TlsWant): SessionTls | null {
  if (e.tls) return e.tls;
  if (want === 'dane' && (e.code === 'ETLS' || e.command === 'STARTTLS'))
    return {
      version: null,
      cipher: null,
      verified: false,
      error: `STARTTLS required: ${e.message}`,
      result_type: 'starttls-not-supported',
    };
  return null;
}

/** A DANE session's TLS: verified when the chain the server sent satisfies the records (none: encrypted only). */
export function daneTlsInfo(conn: SMTPConnection, dane: DaneWant): SessionTls | null {
  const sock = socketOf(conn) as TLSSocket | null;
  if (!conn.secure || !sock || typeof sock.getProtocol !== 'function') return null;
  const base = { version: sock.getProtocol(), cipher: sock.getCipher()?.name ?? null };
  if (dane.records.length === 0) return { ...base, verified: false };
  const f = daneVerify(peerChain(sock), dane.records, dane.names, Date.now());
  return f ? { ...base, verified: false, error: f.failure, result_type: f.result_type } : { ...base, verified: true };
}

/** The certificates the server sent, leaf first (DER). */
function peerChain(sock: TLSSocket): Buffer[] {
  const out: Buffer[] = [];
  const seen = new Set<string>();
  let c: DetailedPeerCertificate | undefined = sock.getPeerCertificate(true);
  while (c?.raw && !seen.has(c.fingerprint256) && out.length < 10) {
    seen.add(c.fingerprint256);
    out.push(c.raw);
    c = c.issuerCertificate;
  }
  return out;
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
