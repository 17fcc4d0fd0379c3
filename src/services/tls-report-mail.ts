// A TLS report (RFC 8460 §5.3) to a `mailto:` rua as an email of the team that holds MTA_TLSRPT_FROM's domain
// (verified): a `multipart/report; report-type="tlsrpt"` message (a text part, then the gzip JSON as
// application/tlsrpt+gzip) submitted as SMTP submission's are (services/submission.ts), so it is DKIM-signed with that
// domain's key and delivered by the delivery loop. Its Message-ID names the report and the address: the same report
// to the same address is queued once (submission's Message-ID de-duplication). Its TLS-Report-Domain header marks it:
// its own delivery is never counted in a TLS report (outbound/loop.ts).
import { createHash, randomBytes } from 'node:crypto';
import { tlsrptFilename, tlsrptSubject } from '../core/tlsrpt.js';
import { runPlan } from '../store/op.js';
import { domainsNamed } from '../store/domains.js';
import { submitMessage } from './submission.js';
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
  const owner = (await runPlan(ctx.db, domainsNamed(ctx.db, fromDomain))).find((d) => d.status === 'verified');
  if (!owner) throw new Error(`MTA_TLSRPT_FROM: ${fromDomain} is not a verified domain of any team`);
  const p = { keyId: 'tlsrpt', teamId: owner.team_id, mode: 'live' as const, scopes: new Set(['emails:send']) };
  const r = await submitMessage(ctx, p, [to], reportMessage(ctx.config.hostname, from, to, domain, report, gz));
  return r.id;
}

/** The RFC 8460 §5.3 message: multipart/report, report-type tlsrpt, the report gzipped and base64 in 76-column lines. */
function reportMessage(submitter: string, from: string, to: string, domain: string, report: TlsReport, gz: Buffer) {
  const range = report['date-range'];
  const file = tlsrptFilename(
    submitter,
    domain,
    Date.parse(range['start-datetime']),
    Date.parse(range['end-datetime']),
  );
  const boundary = `tlsrpt-${randomBytes(12).toString('hex')}`;
  const tag = createHash('sha256').update(`${report['report-id']} ${to}`).digest('hex').slice(0, 32);
  const lines = [
    `From: ${from}`,
    `To: ${to}`,
    `Subject: ${tlsrptSubject(domain, submitter, report['report-id'])}`,
    `Message-ID: <tlsrpt.${tag}@${submitter}>`,
    `TLS-Report-Domain: ${domain}`,
    `TLS-Report-Submitter: ${submitter}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type="tlsrpt"; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    `This is an aggregate TLS report from ${submitter} for ${domain} (RFC 8460).`,
    `--${boundary}`,
    'Content-Type: application/tlsrpt+gzip',
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment; filename="${file}"`,
    '',
    ...(gz.toString('base64').match(/.{1,76}/g) ?? []),
    `--${boundary}--`,
    '',
  ];
  return Buffer.from(lines.join('\r\n'));
}
