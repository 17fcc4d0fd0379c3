// printable(raw): a stored message made safe to print on a terminal (`mta reports show`): CRLF becomes a
// newline; every other control character (C0 but \n and \t, DEL, C1, bidi overrides) is shown as \xNN / \u{N}.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function escapeChar(c: string): string {
  const n = c.codePointAt(0) as number;
  return n < 0x100 ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u{${n.toString(16)}}`;
}

/** UTF-8 when the bytes are valid UTF-8, else Latin-1 (one character per byte, nothing lost). */
function decode(raw: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    return raw.toString('latin1');
  }
}

export function printable(raw: Buffer): string {
  return decode(raw).replace(/\r\n/g, '\n').replace(CONTROL, escapeChar);
}
