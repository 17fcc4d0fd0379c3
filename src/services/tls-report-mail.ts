// A TLS report (RFC 8460 §5.3) to a `mailto:` rua as an email of the team that holds MTA_TLSRPT_FROM's domain
// (verified): queued like any email, so it is DKIM-signed with that domain's key and delivered by the delivery loop.
// Its TLS-Report-Domain header marks it: its own delivery is never counted in a TLS report (outbound/loop.ts).
import { tlsrptFilename, tlsrptSubject } from '../core/tlsrpt.js';
import { runPlan } from '../store/op.js';
import { domainsNamed } from '../store/domains.js';
import { submitEmail } from './emails.js';
import type { Ctx } from './context.js';
import type { TlsReport } from './tls-reports.js';

/** Queues the report mail; throws when MTA_TLSRPT_FROM is unset or its domain is no team's verified domain. */
export async function mailTlsReport(
  ctx: Ctx,
  domain: string,
  report: TlsReport,
  gz: Buffer,
  to: string,
): Promise<string> {
  const from = ctx.config.tlsrptFrom;
  if (!from) throw new Error('MTA_TLSRPT_FROM is not set: no address to mail TLS reports from');
  const fromDomain = from.slice(from.lastIndexOf('@') + 1).toLowerCase();
  const owner = (await runPlan(domainsNamed(ctx.db, fromDomain))).find((d) => d.status === 'verified');
  if (!owner) throw new Error(`MTA_TLSRPT_FROM: ${fromDomain} is not a verified domain of any team`);
  const submitter = ctx.config.hostname;
  const range = report['date-range'];
  const start = Date.parse(range['start-datetime']);
  const end = Date.parse(range['end-datetime']);
  const input = {
    from,
    to,
    subject: tlsrptSubject(domain, submitter, report['report-id']),
    text: `This is an aggregate TLS report from ${submitter} for ${domain} (RFC 8460).`,
    headers: { 'TLS-Report-Domain': domain, 'TLS-Report-Submitter': submitter },
    attachments: [
      {
        filename: tlsrptFilename(submitter, domain, start, end),
        content: gz.toString('base64'),
        content_type: 'application/tlsrpt+gzip',
      },
    ],
  };
  const p = { keyId: 'tlsrpt', teamId: owner.team_id, mode: 'live' as const, scopes: new Set(['emails:send']) };
  // The same report to the same address is queued once (a run repeated within 24 hours).
  const r = await submitEmail(ctx, p, input, `tlsrpt:${report['report-id']}:${to}`);
  return (r.body as { id: string }).id;
}
