// Whether a complaint report comes from a configured feedback-loop provider (MTA_FBL_SOURCES): a
// passing DKIM signature (mailauth, DNS through the configured resolver) by a listed signer. See docs/inbound.md.
import { dkimVerify } from 'mailauth';
import { createResolver } from './resolver.js';
import type { Ctx } from './context.js';

/**
 * The listed entry a signature by `domain` satisfies, for a message whose From is `from`: a domain
 * entry matches that domain and its subdomains; an address entry (`staff@hotmail.com`, for a provider
 * whose users sign with the same domain) matches only its exact domain and only when From is that address.
 */
export function allowedSigner(entries: readonly string[], domain: string, from: string | null): string | null {
  const d = domain.toLowerCase().replace(/\.$/, '');
  for (const entry of entries) {
    const e = entry.toLowerCase();
    const at = e.lastIndexOf('@');
    if (at > 0 ? d === e.slice(at + 1) && from === e : d === e || d.endsWith(`.${e}`)) return entry;
  }
  return null;
}

/** d= of each DKIM-Signature in the top header block (a cheap look before any DNS query). */
function signingDomains(raw: Buffer): string[] {
  const text = raw.subarray(0, Math.min(raw.length, 64 * 1024)).toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const head = (end < 0 ? text : text.slice(0, end)).replace(/\r?\n[ \t]+/g, ' ');
  const out: string[] = [];
  for (const line of head.split(/\r?\n/)) {
    if (!/^dkim-signature\s*:/i.test(line)) continue;
    const d = /(?:[:;]|^)\s*d\s*=\s*([^;\s]+)/i.exec(line.slice(line.indexOf(':') + 1));
    if (d) out.push(d[1].toLowerCase());
  }
  return out;
}

interface Sig {
  signingDomain: string;
  status: { result: string };
  canonBodyLengthLimited?: boolean;
  signingHeaders?: { keys?: string };
}

const signsFrom = (s: Sig) =>
  (s.signingHeaders?.keys ?? '')
    .toLowerCase()
    .split(':')
    .map((k) => k.trim())
    .includes('from');

/**
 * The listed signer that vouches for `raw`, or null. A signature counts only when it passes, covers
 * From and the whole body (no l= tag), and the message has exactly one From. Throws when the key of
 * a listed signer could not be fetched (temporary DNS trouble), so the sender retries later.
 */
export async function fblSigner(ctx: Pick<Ctx, 'config' | 'now'>, raw: Buffer): Promise<string | null> {
  const entries = ctx.config.fblSources;
  const listed = (d: string) => entries.some((e) => allowedSigner([e], d, e.includes('@') ? e.toLowerCase() : null));
  if (!signingDomains(raw).some(listed)) return null;
  const resolver = createResolver(ctx.config, {
    timeoutMs: Math.max(1, Math.round(ctx.config.dnsCheckTimeoutSeconds * 1000)),
  });
  const res = await dkimVerify(raw, {
    resolver: (name: string, type: string) => resolver.resolve(name, type) as Promise<never>,
    curTime: ctx.now(),
  });
  const from = res.headerFrom.length === 1 ? res.headerFrom[0].toLowerCase() : null;
  let unavailable = false;
  for (const s of res.results as unknown as Sig[]) {
    if (!allowedSigner(entries, s.signingDomain, from)) continue;
    if (s.status.result === 'temperror') unavailable = true;
    if (s.status.result === 'pass' && !s.canonBodyLengthLimited && signsFrom(s)) return s.signingDomain.toLowerCase();
  }
  if (unavailable) throw new Error('the DKIM key of a feedback-loop signer could not be fetched');
  return null;
}
