// Small tolerant MIME reader: headers (unfolded, lower-case names), multipart splitting, transfer decoding;
// charsets and RFC 2047 encoded words through libmime. Never throws on broken real-world messages; text is best-effort.
import libmime from 'libmime';
import { decode as decodeCharset } from 'libmime/lib/charset.js';

export interface Entity {
  headers: Map<string, string[]>;
  type: string;
  params: Record<string, string>;
  /** decoded body text (for multipart: the raw body) */
  text: string;
  /** the body as received, before its transfer encoding is undone (latin1 byte string): attachments' bytes */
  encoded: string;
  parts: Entity[];
}

/** Splits a raw message (CRLF or LF) into header block and body. */
export function splitMessage(raw: string): { head: string; body: string } {
  const s = raw.replace(/\r\n?/g, '\n');
  const start = s.replace(/^(?:From [^\n]*\n)/, '');
  const i = start.search(/\n\n/);
  if (/^\n/.test(start)) return { head: '', body: start.slice(1) };
  if (i < 0) return { head: start, body: '' };
  return { head: start.slice(0, i), body: start.slice(i + 2) };
}

/**
 * Bytes of a message that are read (the rest is ignored): everything a report says comes first, and
 * no pattern ever scans more than this. Header values are cut to HEADER_VALUE_CAP.
 */
export const TEXT_CAP = 256 * 1024;

/** Longest header value kept (longer ones are cut here, before any other pattern reads them). */
export const HEADER_VALUE_CAP = 8 * 1024;

/** Parses a header block into a map of lower-case names to values (in order), each cut to HEADER_VALUE_CAP. */
export function parseHeaders(head: string): Map<string, string[]> {
  const map = new Map<string, string[]>();
  const unfolded = head.replace(/\n[ \t]+/g, ' ');
  for (const line of unfolded.split('\n')) {
    const m = /^([!-9;-~]+)[ \t]*:/.exec(line);
    // a line break other than \n in the value is no header line (as /^(name)[ \t]*:[ \t]*(.*)$/ read it)
    if (!m || /[\r\u2028\u2029]/.test(line)) continue;
    const name = (m[1] as string).toLowerCase();
    const list = map.get(name) ?? [];
    list.push(line.slice(m[0].length).trim().slice(0, HEADER_VALUE_CAP));
    map.set(name, list);
  }
  return map;
}

export function header(h: Map<string, string[]>, name: string): string | null {
  return h.get(name.toLowerCase())?.[0] ?? null;
}

function parseContentType(value: string | null): { type: string; params: Record<string, string> } {
  const v = value ?? 'text/plain';
  const type = (v.split(';')[0] ?? '').trim().toLowerCase() || 'text/plain';
  const params: Record<string, string> = {};
  for (const m of v.matchAll(/;\s*([\w*-]+)\s*=\s*(?:"([^"]*)"|([^;\s]+))/g)) {
    params[(m[1] as string).toLowerCase()] = m[2] ?? m[3] ?? '';
  }
  return { type, params };
}

export function decodeQP(s: string): Buffer {
  const soft = s.replace(/=[ \t]*\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < soft.length; i++) {
    const c = soft.charCodeAt(i);
    const hex = soft.slice(i + 1, i + 3);
    if (c === 61 && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
      continue;
    }
    bytes.push(c & 0xff);
  }
  return Buffer.from(bytes);
}

/** Bytes in a charset → text (libmime: aliases, Japanese charsets; an unknown charset reads as UTF-8). */
export function toText(buf: Buffer, charset = 'utf-8'): string {
  const cs = charset.toLowerCase();
  try {
    // "us-ascii" bodies often hold UTF-8 (mislabelled notices): read them as UTF-8, as before
    return decodeCharset(buf, cs === 'us-ascii' || cs === 'ascii' ? 'utf-8' : cs);
  } catch {
    return buf.toString('utf8');
  }
}

/** Decodes a body given as a latin1 "byte string" according to its transfer encoding. */
export function decodeBody(body: string, cte: string | null, charset: string | undefined): string {
  const enc = (cte ?? '').toLowerCase().trim();
  let buf: Buffer;
  if (enc === 'base64') buf = Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  else if (enc === 'quoted-printable') buf = decodeQP(body);
  else buf = Buffer.from(body, 'latin1');
  return toText(buf, charset ?? 'utf-8');
}

/**
 * Decodes RFC 2047 encoded words (libmime: adjacent words joined, a character split across words kept whole,
 * "=?UTF-8?B?w6k=?= =?UTF-8?B?w6k=?=" → "éé"); the text as given when it cannot be decoded.
 */
export function decodeWords(s: string): string {
  if (!s.includes('=?')) return s;
  try {
    return libmime.decodeWords(s);
  } catch {
    return s;
  }
}

function splitMultipart(body: string, boundary: string): string[] {
  const delim = `--${boundary}`;
  const lines = body.split('\n');
  const parts: string[] = [];
  let current: string[] | null = null;
  for (const line of lines) {
    const t = line.trimEnd();
    if (t === delim || t === `${delim}--`) {
      if (current) parts.push(current.join('\n'));
      current = t === delim ? [] : null;
      if (t !== delim) break;
      continue;
    }
    current?.push(line);
  }
  if (current && current.length) parts.push(current.join('\n'));
  return parts;
}

/** Parses a raw entity (latin1 byte string) recursively. */
export function parseEntity(raw: string, depth = 0): Entity {
  const { head, body } = splitMessage(raw);
  const headers = parseHeaders(head);
  const { type, params } = parseContentType(header(headers, 'content-type'));
  const entity: Entity = { headers, type, params, text: '', encoded: body, parts: [] };
  if (type.startsWith('multipart/') && params.boundary && depth < 8) {
    entity.text = body;
    entity.parts = splitMultipart(body, params.boundary).map((p) => parseEntity(p, depth + 1));
    if (entity.parts.length) return entity;
  }
  entity.text = decodeBody(body, header(headers, 'content-transfer-encoding'), params.charset);
  return entity;
}

/** All leaf entities, depth first; message/rfc822 parts are leaves. */
export function leaves(e: Entity): Entity[] {
  if (!e.parts.length) return [e];
  return e.parts.flatMap(leaves);
}
