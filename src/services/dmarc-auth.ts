// Who vouches for a DMARC aggregate report (docs/inbound.md "Who sent a DMARC report"). Anyone can mail dmarc@ a
// report that claims to come from google.com and says an IP is sending as a team's domain: such a report is stored,
// but only an authenticated one raises alerts. A report is authenticated when the message carries a passing DKIM
// signature (covering From, whole body) or passes SPF for its MAIL FROM, by a domain aligned (same organisational
// domain, as DMARC's relaxed alignment) with the domain of the reporter's own address in the report
// (report_metadata/email). mailauth does the checks, DNS through the configured resolver (MTA_DNS_SERVERS).
import { getAlignment } from 'mailauth/lib/tools.js';
import { checkMessage } from './receiving.js';
import type { Ctx } from './context.js';

export interface ReportAuth {
  authenticated: boolean;
  /** `dkim:<d=>` or `spf:<MAIL FROM domain>` when authenticated; else null */
  by: string | null;
}

interface DkimResult {
  signingDomain?: string;
  status?: { result?: string };
  canonBodyLengthLimited?: boolean;
  signingHeaders?: { keys?: string };
}

const domainOf = (address: string | null | undefined) => {
  const at = (address ?? '').lastIndexOf('@');
  const d = at < 0 ? '' : (address as string).slice(at + 1);
  return d
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[|\]$/g, '');
};
const coversFrom = (r: DkimResult) =>
  (r.signingHeaders?.keys ?? '')
    .toLowerCase()
    .split(':')
    .some((k) => k.trim() === 'from');

/** The first of `domains` aligned (relaxed) with `reporter`, or null. */
export function alignedWith(reporter: string, domains: string[]): string | null {
  if (!reporter.includes('.')) return null;
  const hit = getAlignment(reporter, domains, false);
  return hit ? hit.domain.toLowerCase() : null;
}

/**
 * Checks the message `raw` of a report whose reporter's address is `reporterEmail`. Never throws: a DNS failure is
 * "not authenticated" (the report is still stored, it only raises no alert).
 */
export async function reportAuth(
  ctx: Pick<Ctx, 'config' | 'log'>,
  raw: Buffer,
  env: { mailFrom: string | null; remoteIp: string | null; helo?: string | null },
  reporterEmail: string | null,
): Promise<ReportAuth> {
  const reporter = domainOf(reporterEmail);
  if (!reporter) return { authenticated: false, by: null };
  try {
    const res = await checkMessage(ctx, raw, env, { disableDmarc: true });
    const passing = ((res.dkim?.results ?? []) as DkimResult[])
      .filter((r) => r.status?.result === 'pass' && !r.canonBodyLengthLimited && coversFrom(r) && r.signingDomain)
      .map((r) => (r.signingDomain as string).toLowerCase());
    const dkim = alignedWith(reporter, passing);
    if (dkim) return { authenticated: true, by: `dkim:${dkim}` };
    const spfDomain = domainOf(env.mailFrom);
    if (res.spf && res.spf.status?.result === 'pass' && spfDomain && alignedWith(reporter, [spfDomain]))
      return { authenticated: true, by: `spf:${spfDomain}` };
  } catch (err) {
    ctx.log.info({ err: (err as Error).message }, 'DMARC report: authentication checks failed');
  }
  return { authenticated: false, by: null };
}
