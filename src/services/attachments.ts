// Checks the `attachments` of an email body (decisions.md "Attachments and batches"): at most 20; filename, strict
// base64 content, content_type (default from the extension), content_id; returns the rows to store and what the Email shows.
import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import { invalid } from '../core/errors.js';
import type { NewAttachment } from '../store/email-content.js';

export interface AttachmentInput {
  filename: string;
  content: string;
  content_type?: string | null;
  content_id?: string | null;
}
/** One attachment as the Email object reports it. */
export interface AttachmentInfo {
  filename: string;
  content_type: string;
  size: number;
}
export interface CheckedAttachments {
  rows: NewAttachment[];
  info: AttachmentInfo[];
  /** Bytes the parts take in the built message (base64 lines of 76 + CRLF, plus part headers). */
  builtBytes: number;
}

export const MAX_ATTACHMENTS = 20;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]{1,127}\/[A-Za-z0-9!#$&^_.+-]{1,127}$/;

function decode(content: string, param: string): Buffer {
  const s = content.replace(/\r?\n/g, '');
  if (s.length % 4 !== 0 || !BASE64.test(s))
    throw invalid(param, `${param} must be standard base64 (A-Z, a-z, 0-9, +, /, = padding).`);
  return Buffer.from(s, 'base64');
}

function checkOne(a: AttachmentInput, param: string): NewAttachment {
  if (a.filename.length < 1 || a.filename.length > 255 || /[/\\\r\n\0]/.test(a.filename))
    throw invalid(`${param}.filename`, 'filename must be 1 to 255 characters without /, \\, CR or LF.');
  const ct = a.content_type ?? null;
  if (ct !== null && !CONTENT_TYPE.test(ct))
    throw invalid(`${param}.content_type`, 'content_type must be a media type such as application/pdf.');
  const cid = a.content_id ?? null;
  if (cid !== null && (cid.length < 1 || cid.length > 255 || /[<>\s]/.test(cid)))
    throw invalid(`${param}.content_id`, 'content_id must be 1 to 255 characters without <, > or white space.');
  return {
    filename: a.filename,
    content_type: (ct ?? detectMimeType(a.filename)).toLowerCase(),
    content_id: cid,
    content: decode(a.content, `${param}.content`),
  };
}

/** Validates and decodes the list (null/undefined: none). Throws invalid_parameter with `param` naming the field. */
export function checkAttachments(list: readonly AttachmentInput[] | null | undefined): CheckedAttachments {
  const all = list ?? [];
  if (all.length > MAX_ATTACHMENTS)
    throw invalid('attachments', `At most ${MAX_ATTACHMENTS} attachments; got ${all.length}.`);
  const rows = all.map((a, i) => checkOne(a, `attachments[${i}]`));
  const builtBytes = rows.reduce((n, r) => n + Math.ceil(r.content.length / 57) * 78 + 300 + r.filename.length * 3, 0);
  return {
    rows,
    info: rows.map((r) => ({ filename: r.filename, content_type: r.content_type, size: r.content.length })),
    builtBytes,
  };
}
