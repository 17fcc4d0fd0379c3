// DANE for SMTP (RFC 7672, RFC 7671), the pure parts: which TLSA records are usable, and whether a server's
// certificate chain matches them. DANE-EE(3): the leaf's certificate or public key matches a record, nothing else is
// checked (no name, no expiry, no chain). DANE-TA(2): a certificate of the chain the server sent matches a record,
// the chain from the leaf up to it verifies, the leaf is valid for the MX host name and is not expired.
// PKIX-TA(0) and PKIX-EE(1) are unusable in SMTP (RFC 7672 §3.1.3). The lookups live in outbound/dane.ts.
import { createHash, X509Certificate } from 'node:crypto';

/** One TLSA record; `data` in lower-case hex (the wire form survives the worker thread's messages). */
export interface Tlsa {
  usage: number;
  selector: number;
  matching: number;
  data: string;
}

/** RFC 8460 result types of the DANE failures (TLS-RPT counts them). */
export type DaneResultType =
  | 'tlsa-invalid'
  | 'dnssec-invalid'
  | 'dane-required'
  | 'certificate-host-mismatch'
  | 'certificate-expired'
  | 'certificate-not-trusted'
  | 'validation-failure'
  | 'starttls-not-supported';

export interface DaneFailure {
  result_type: DaneResultType;
  failure: string;
}

const DIGEST_BYTES: Record<number, number> = { 1: 32, 2: 64 };

/** The records usable for SMTP: usage DANE-TA(2)/DANE-EE(3), selector 0/1, matching 0/1/2 with a digest's length. */
export function usableTlsa(records: readonly Tlsa[]): Tlsa[] {
  return records.filter(
    (r) =>
      (r.usage === 2 || r.usage === 3) &&
      (r.selector === 0 || r.selector === 1) &&
      (r.matching === 0 ? r.data.length > 0 : DIGEST_BYTES[r.matching] * 2 === r.data.length),
  );
}

/** What a record's data is compared with: the certificate (selector 0) or its SubjectPublicKeyInfo (1), hashed. */
function associated(cert: X509Certificate, selector: number, matching: number): string {
  const raw = selector === 0 ? cert.raw : cert.publicKey.export({ type: 'spki', format: 'der' });
  if (matching === 1) return createHash('sha256').update(raw).digest('hex');
  if (matching === 2) return createHash('sha512').update(raw).digest('hex');
  return raw.toString('hex');
}

const matches = (cert: X509Certificate, r: Tlsa) => associated(cert, r.selector, r.matching) === r.data.toLowerCase();

/**
 * Whether the chain (DER, leaf first, as the server sent it) satisfies the usable records for a host known by
 * `names` (the MX host name, and the TLSA base domain when another); null when it does, else why not.
 */
export function daneVerify(
  chainDer: readonly Buffer[],
  records: readonly Tlsa[],
  names: readonly string[],
  now: number,
): DaneFailure | null {
  if (chainDer.length === 0) return { result_type: 'validation-failure', failure: 'dane: no certificate' };
  let chain: X509Certificate[];
  try {
    chain = chainDer.map((d) => new X509Certificate(d));
  } catch (err) {
    return { result_type: 'validation-failure', failure: `dane: unreadable certificate: ${(err as Error).message}` };
  }
  const leaf = chain[0];
  if (records.some((r) => r.usage === 3 && matches(leaf, r))) return null;
  const ta = records.filter((r) => r.usage === 2);
  let trusted: string | null = null;
  for (let i = 1; i < chain.length && ta.length; i++) {
    if (!ta.some((r) => matches(chain[i], r))) continue;
    const broken = brokenLink(chain, i);
    if (broken === null) {
      trusted = chain[i].subject;
      break;
    }
    return { result_type: 'certificate-not-trusted', failure: `dane: chain to the trust anchor broken: ${broken}` };
  }
  if (trusted === null)
    return {
      result_type: 'tlsa-invalid',
      failure: `dane: no TLSA record matches the certificate${ta.length ? ' or its chain' : ''}`,
    };
  if (!names.some((n) => leaf.checkHost(n, { subject: 'default' }) !== undefined))
    return {
      result_type: 'certificate-host-mismatch',
      failure: `dane: certificate not valid for ${names.join(' or ')}`,
    };
  if (Date.parse(leaf.validTo) < now || Date.parse(leaf.validFrom) > now)
    return {
      result_type: 'certificate-expired',
      failure: `dane: certificate expired or not yet valid (${leaf.validTo})`,
    };
  return null;
}

/** Why chain[0..top] does not verify link by link (each certificate issued and signed by the next), or null. */
function brokenLink(chain: readonly X509Certificate[], top: number): string | null {
  for (let k = 0; k < top; k++) {
    const [cert, issuer] = [chain[k], chain[k + 1]];
    if (!cert.checkIssued(issuer) || !cert.verify(issuer.publicKey))
      return `${cert.subject} not signed by ${issuer.subject}`;
  }
  return null;
}
