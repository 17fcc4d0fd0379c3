// DKIM-Signature for a composed message (relaxed/relaxed, rsa-sha256 or ed25519-sha256): byte-for-byte what
// mailauth's dkimSign makes, but each private key is parsed once (KeyObject cache) instead of on every message, and
// what the composer writes is canonicalised by the fast paths of dkim-relaxed.ts (mailauth's canonicalisation and
// header formatting for anything else). Throws on a bad key.
import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { parseHeaders, getSigningHeaderLines, formatSignatureHeaderLine } from 'mailauth/lib/tools.js';
import { dkimBody } from 'mailauth/lib/dkim/body/index.js';
import { generateCanonicalizedHeader } from 'mailauth/lib/dkim/header/index.js';
import { plainBodyHash, plainSigningHeader, type SignatureTags, type SigningHeader } from './dkim-relaxed.js';

export interface DkimKey {
  signingDomain: string;
  selector: string;
  privateKey: string;
}

const KEYS = new Map<string, KeyObject>();
const MAX_KEYS = 1000;

function keyObject(pem: string): KeyObject {
  let k = KEYS.get(pem);
  if (!k) {
    k = createPrivateKey(pem);
    if (KEYS.size >= MAX_KEYS) KEYS.delete(KEYS.keys().next().value as string);
    KEYS.set(pem, k);
  }
  return k;
}

/** The relaxed body hash by mailauth (any body). */
export function mailauthBodyHash(body: Buffer): string {
  const hasher = dkimBody('relaxed', 'sha256', false);
  hasher.update(body);
  return hasher.digest('base64');
}

/** Offset of the first byte of the body (after the blank line ending the header). */
function bodyStart(raw: Buffer): number {
  const i = raw.indexOf('\r\n\r\n');
  return i < 0 ? raw.length : i + 4;
}

/** mailauth's canonicalisation of the signed header fields and its DKIM-Signature header (any header). */
export function mailauthSigningHeader(head: Buffer, tags: SignatureTags): SigningHeader {
  const lines = getSigningHeaderLines(parseHeaders(head).parsed, false);
  const { canonicalizedHeader, dkimHeaderOpts } = generateCanonicalizedHeader('DKIM', lines, {
    signingDomain: tags.domain,
    selector: tags.selector,
    type: 'DKIM',
    maxBodyLength: '',
    instance: false,
    algorithm: tags.algorithm,
    canonicalization: 'relaxed/relaxed',
    signTime: new Date(tags.time * 1000),
    bodyHash: tags.bodyHash,
  });
  return {
    canonical: canonicalizedHeader.toString('latin1'),
    header: (b) => formatSignatureHeaderLine('DKIM', { ...dkimHeaderOpts, b }, true),
  };
}

/**
 * The DKIM-Signature header line, CRLF-terminated, to prepend to `raw` (CRLF line ends). The private-key
 * operation runs on libuv's thread pool (crypto.sign with a callback), off the event loop.
 */
export async function dkimSignature(raw: Buffer, key: DkimKey, signTime?: Date): Promise<string> {
  const priv = keyObject(key.privateKey);
  const keyType = priv.asymmetricKeyType;
  if (keyType !== 'rsa' && keyType !== 'ed25519') throw new Error(`unsupported DKIM key type ${keyType}`);
  const split = bodyStart(raw);
  const body = raw.subarray(split);
  const head = raw.subarray(0, split);
  const tags: SignatureTags = {
    algorithm: `${keyType}-sha256`,
    domain: key.signingDomain,
    selector: key.selector,
    // One time for the canonical form and the header written after the asynchronous signature (mailauth, left to
    // itself, read the clock for each, and a second boundary in between made a bad signature).
    time: Math.floor((signTime ?? new Date()).getTime() / 1000),
    bodyHash: plainBodyHash(body) ?? mailauthBodyHash(body),
  };
  const signing = plainSigningHeader(head.toString('latin1'), tags) ?? mailauthSigningHeader(head, tags);
  const data = Buffer.from(signing.canonical, 'latin1');
  const input = keyType === 'rsa' ? data : createHash('sha256').update(data).digest();
  const signature = await new Promise<Buffer>((resolve, reject) => {
    sign(keyType === 'rsa' ? tags.algorithm : null, input, priv, (err, sig) => (err ? reject(err) : resolve(sig)));
  });
  return signing.header(signature.toString('base64')) + '\r\n';
}
