// readDmarcMessage(raw): finds a DMARC aggregate report in a message (the body or an attachment; XML, gzip or
// zip), decompresses it within DMARC_XML_CAP, insists on UTF-8 and no DTD, and reads it (core/dmarc-report.ts).
// Never throws: anything else is an `error` the listener keeps for the operator. Runs in the parse worker.
import zlib from 'node:zlib';
import { readDmarcXml, type DmarcError, type DmarcFormat, type DmarcReading } from '../core/dmarc-report.js';

export type { DmarcReading } from '../core/dmarc-report.js';
import { header, leaves, parseEntity, type Entity } from './mime.js';
import { unzipFirst } from './zip.js';

/** Largest report XML read, after decompression (a gzip or zip that expands past it is `too_large`). */
export const DMARC_XML_CAP = 4 * 1024 * 1024;

const fail = (error: DmarcError, detail: string): DmarcReading => ({ ok: false, error, detail });

const isGzip = (b: Buffer) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
const isZip = (b: Buffer) => b.length >= 4 && b.readUInt32LE(0) === 0x04034b50;
/** XML starts with `<` after an optional UTF-8 BOM and white space (a UTF-16 BOM is caught as a charset). */
function looksXml(b: Buffer): boolean {
  const head = b
    .subarray(0, 256)
    .toString('latin1')
    .replace(/^\xef\xbb\xbf/, '');
  return /^\s*</.test(head) || b[0] === 0xfe || b[0] === 0xff;
}

/** The bytes of an entity's body after its transfer encoding (base64, quoted-printable or none). */
function bodyBytes(e: Entity): Buffer {
  const enc = (header(e.headers, 'content-transfer-encoding') ?? '').toLowerCase().trim();
  if (enc === 'base64') return Buffer.from(e.encoded.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  return Buffer.from(e.encoded, 'latin1');
}

function fileName(e: Entity): string {
  const disp = header(e.headers, 'content-disposition') ?? '';
  const m = /filename\*?\s*=\s*"?([^";]{1,255})/i.exec(disp);
  return (m?.[1] ?? e.params.name ?? '').toLowerCase();
}

/** Parts that may hold the report: a gzip, zip or XML by type or name, or (a bare report) the one body. */
function candidates(root: Entity): Entity[] {
  const parts = leaves(root);
  if (parts.length === 1) return parts;
  const wanted = /(?:gzip|zip|xml|octet-stream)$/;
  return parts.filter((p) => wanted.test(p.type) || /\.(?:xml|gz|zip)$/.test(fileName(p)));
}

function gunzip(b: Buffer): Buffer | DmarcReading {
  try {
    return zlib.gunzipSync(b, { maxOutputLength: DMARC_XML_CAP });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      return fail('too_large', `expands past ${DMARC_XML_CAP} bytes`);
    return fail('corrupt', `gzip: ${(err as Error).message}`);
  }
}

/** The report's XML bytes and how they came: decompressed once at most (an archive inside is `nested_archive`). */
function unpack(b: Buffer): { xml: Buffer; format: DmarcFormat } | DmarcReading {
  let format: DmarcFormat = 'xml';
  let xml = b;
  if (isGzip(b)) {
    const out = gunzip(b);
    if (!Buffer.isBuffer(out)) return out;
    [xml, format] = [out, 'gzip'];
  } else if (isZip(b)) {
    const out = unzipFirst(b, DMARC_XML_CAP);
    if (!out.ok) return fail(out.error, out.detail);
    [xml, format] = [out.data, 'zip'];
  }
  if (isGzip(xml) || isZip(xml)) return fail('nested_archive', 'an archive inside the archive is not read');
  if (xml.length > DMARC_XML_CAP) return fail('too_large', `larger than ${DMARC_XML_CAP} bytes`);
  return { xml, format };
}

/** UTF-8 (or US-ASCII) only, as the schemas' reports are written; anything else is `charset`. */
function utf8(xml: Buffer): string | DmarcReading {
  if (xml[0] === 0xfe || xml[0] === 0xff || xml.subarray(0, 64).includes(0))
    return fail('charset', 'UTF-16 or another wide encoding');
  const start = xml.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf])) ? 3 : 0;
  const head = xml.subarray(start, start + 256).toString('latin1');
  const decl = head.startsWith('<?xml') ? head.slice(0, head.indexOf('?>') + 1) : '';
  const enc = /\bencoding\s*=\s*["']([^"']{1,40})["']/i.exec(decl)?.[1]?.toLowerCase();
  if (enc && !['utf-8', 'utf8', 'us-ascii', 'ascii'].includes(enc)) return fail('charset', `declared ${enc}`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(xml.subarray(start));
  } catch {
    return fail('charset', 'not valid UTF-8');
  }
}

function readOne(part: Entity): DmarcReading | null {
  const bytes = bodyBytes(part);
  if (!isGzip(bytes) && !isZip(bytes) && !looksXml(bytes)) return null;
  const u = unpack(bytes);
  if ('ok' in u) return u;
  const text = utf8(u.xml);
  if (typeof text !== 'string') return text;
  // No DTD is ever read: a DOCTYPE (the carrier of entity definitions, "billion laughs") makes the report unreadable.
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) return fail('dtd', 'a DOCTYPE or ENTITY declaration');
  const r = readDmarcXml(text);
  return r.ok ? { ok: true, report: r.report, format: u.format, attachment: false } : fail(r.error, r.detail);
}

/**
 * Reads the first part that holds a report (in message order). `truncated`: the listener kept only the first
 * bytes of a larger message, so a report that cannot be read is said to be cut rather than broken.
 */
export function readDmarcMessage(raw: Buffer, truncated = false): DmarcReading {
  const root = parseEntity(raw.toString('latin1'));
  const parts = candidates(root);
  let first: DmarcReading | null = null;
  for (const part of parts) {
    const r = readOne(part);
    if (r?.ok) return { ...r, attachment: part !== root };
    first ??= r;
  }
  if (truncated && (!first || first.error !== 'too_large'))
    return fail('truncated', 'the message is larger than the part of it kept for reading');
  return first ?? fail('no_report', 'no XML, gzip or zip part');
}
