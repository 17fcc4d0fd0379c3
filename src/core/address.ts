// Mailbox parsing and validation: `addr@domain` or `Name <addr@domain>`, RFC 5321 limits,
// internationalised domains converted to punycode. Pure.
import { domainToASCII } from 'node:url';

const LOCAL_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uFFFF-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uFFFF-]+)*$/;
const LOCAL_QUOTED = /^"([\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export interface Mailbox { name: string | null; address: string; local: string; domain: string }

/** Validates a bare address; returns it normalised (domain lower-cased, punycode) or null. */
export function normaliseAddress(input: string): { address: string; local: string; domain: string } | null {
  if (input.length > 320 || /[\r\n\0]/.test(input)) return null;
  const at = input.lastIndexOf('@');
  if (at < 1 || at === input.length - 1) return null;
  const local = input.slice(0, at);
  const rawDomain = input.slice(at + 1);
  if (local.length > 64 || !(LOCAL_ATOM.test(local) || LOCAL_QUOTED.test(local))) return null;
  if (/^\[.*\]$/.test(rawDomain)) return null; // address literals are not accepted for sending
  const domain = domainToASCII(rawDomain.toLowerCase());
  if (!domain || domain.length > 253) return null;
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^[0-9]+$/.test(labels[labels.length - 1])) return null;
  return { address: `${local}@${domain}`, local, domain };
}

/** Parses `addr` or `Display Name <addr>`; null when malformed. */
export function parseMailbox(input: string): Mailbox | null {
  if (typeof input !== 'string' || /[\r\n\0]/.test(input)) return null;
  const s = input.trim();
  const m = /^(.*?)\s*<([^<>]+)>$/.exec(s);
  if (m) {
    let name: string | null = m[1].trim();
    if (name.startsWith('"') && name.endsWith('"') && name.length >= 2) name = name.slice(1, -1).replace(/\\(.)/g, '$1');
    const addr = normaliseAddress(m[2].trim());
    return addr ? { name: name || null, ...addr } : null;
  }
  const addr = normaliseAddress(s);
  return addr ? { name: null, ...addr } : null;
}

/** Key used for suppression matching: exact local part lower-cased, domain lower-cased. */
export function suppressionKey(address: string): string {
  return address.toLowerCase();
}
