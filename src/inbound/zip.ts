// unzipFirst(zip, cap): the first `.xml` member of a zip archive (a DMARC report's), inflated by node:zlib with
// maxOutputLength = cap, so a member that expands past the cap stops there whatever its header declares.
// Reads the central directory (sizes are there even when the local header defers them to a data descriptor);
// stored and deflated members only; no zip64, no encryption. Never throws.
import zlib from 'node:zlib';

export type UnzipResult =
  | { ok: true; name: string; data: Buffer }
  | { ok: false; error: 'corrupt' | 'too_large' | 'no_report' | 'nested_archive'; detail: string };

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
/** Members looked at before giving up (a report's zip holds one). */
const MAX_MEMBERS = 16;

const corrupt = (detail: string): UnzipResult => ({ ok: false, error: 'corrupt', detail });

function endOfCentralDirectory(b: Buffer): number {
  if (b.length < 22) return -1;
  const stop = Math.max(0, b.length - 22 - 0xffff);
  for (let i = b.length - 22; i >= stop; i--) if (b.readUInt32LE(i) === EOCD) return i;
  return -1;
}

interface Member {
  name: string;
  flags: number;
  method: number;
  size: number;
  declared: number;
  offset: number;
}

function members(b: Buffer): Member[] | UnzipResult {
  const end = endOfCentralDirectory(b);
  if (end < 0) return corrupt('no end of central directory');
  const count = Math.min(b.readUInt16LE(end + 10), MAX_MEMBERS);
  let at = b.readUInt32LE(end + 16);
  const out: Member[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 46 > b.length || b.readUInt32LE(at) !== CENTRAL) return corrupt('bad central directory entry');
    const nameLen = b.readUInt16LE(at + 28);
    out.push({
      flags: b.readUInt16LE(at + 8),
      method: b.readUInt16LE(at + 10),
      size: b.readUInt32LE(at + 20),
      declared: b.readUInt32LE(at + 24),
      offset: b.readUInt32LE(at + 42),
      name: b.subarray(at + 46, Math.min(b.length, at + 46 + nameLen)).toString('latin1'),
    });
    at += 46 + nameLen + b.readUInt16LE(at + 30) + b.readUInt16LE(at + 32);
  }
  return out;
}

function inflate(b: Buffer, m: Member, cap: number): UnzipResult {
  if (m.flags & 1) return corrupt('encrypted member');
  if (m.size === 0xffffffff || m.declared === 0xffffffff || m.offset === 0xffffffff) return corrupt('zip64');
  if (m.declared > cap) return { ok: false, error: 'too_large', detail: `declares ${m.declared} bytes` };
  const h = m.offset;
  if (h + 30 > b.length || b.readUInt32LE(h) !== LOCAL) return corrupt('bad local header');
  const start = h + 30 + b.readUInt16LE(h + 26) + b.readUInt16LE(h + 28);
  if (start + m.size > b.length) return corrupt('member runs past the end of the archive');
  const data = b.subarray(start, start + m.size);
  if (m.method === 0) return { ok: true, name: m.name, data };
  if (m.method !== 8) return corrupt(`compression method ${m.method}`);
  try {
    return { ok: true, name: m.name, data: zlib.inflateRawSync(data, { maxOutputLength: cap }) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      return { ok: false, error: 'too_large', detail: `expands past ${cap} bytes` };
    return corrupt(`deflate: ${(err as Error).message}`);
  }
}

export function unzipFirst(b: Buffer, cap: number): UnzipResult {
  const list = members(b);
  if (!Array.isArray(list)) return list;
  const xml = list.find((m) => /\.xml$/i.test(m.name));
  if (xml) return inflate(b, xml, cap);
  if (list.some((m) => /\.(?:zip|gz)$/i.test(m.name)))
    return { ok: false, error: 'nested_archive', detail: 'an archive inside the archive is not read' };
  return { ok: false, error: 'no_report', detail: 'no .xml member' };
}
