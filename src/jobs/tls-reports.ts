// MTA_TLSRPT=on: once a day (MTA_TLSRPT_CRON, default 00:07 UTC; one node at a time), the previous UTC day's TLS
// report (RFC 8460) of every recipient domain that had traffic and publishes `_smtp._tls` TXT (v=TLSRPTv1; rua=…):
// gzip JSON to each rua, `mailto:` as a DKIM-signed email (services/tls-report-mail.ts), `https:` as a POST.
// Each (domain, day) is taken in the store before it is sent: sent at most once, whichever node runs.
import https from 'node:https';
import { rootCertificates } from 'node:tls';
import { gzipSync } from 'node:zlib';
import type { Resolver } from 'node:dns/promises';
import { readCaFile } from '../config/check.js';
import { tlsrptRua } from '../core/tlsrpt.js';
import { isBlockedIp } from '../core/webhook-address.js';
import type { Ctx } from '../services/context.js';
import { createResolver, resolveAddresses } from '../services/resolver.js';
import { claimTlsReport, domainsToReport, parseDay, tlsReport, yesterday } from '../services/tls-reports.js';
import { mailTlsReport } from '../services/tls-report-mail.js';
import { cronJob, type CronJob } from './cron-job.js';

export interface TlsReportRun {
  day: string;
  sent: number;
  /** domains with traffic but no (single, valid) `_smtp._tls` record */
  unpublished: number;
  failed: number;
}

export function tlsReportJob(ctx: Ctx): CronJob {
  const resolver = createResolver(ctx.config, { timeoutMs: 3000, tries: 2 });
  const ca = readCaFile(ctx.config);
  return cronJob(ctx, {
    name: 'tls-reports',
    expr: ctx.config.tlsrptCron,
    variable: 'MTA_TLSRPT_CRON',
    run: () => sendTlsReports(ctx, { resolver, ca }, yesterday(ctx.now())),
    done: (r) => ({ ...r }),
    what: 'TLS reports',
  });
}

/** Sends the reports of a UTC day (YYYY-MM-DD) not sent yet. */
export async function sendTlsReports(
  ctx: Ctx,
  o: { resolver: Resolver; ca?: string },
  date: string,
): Promise<TlsReportRun> {
  const log = ctx.log.child({ component: 'tls-reports' });
  const run: TlsReportRun = { day: date, sent: 0, unpublished: 0, failed: 0 };
  const day = parseDay(date);
  for (const domain of await domainsToReport(ctx, day)) {
    const rua = tlsrptRua(await txt(o.resolver, `_smtp._tls.${domain}`));
    if (!rua) {
      run.unpublished++;
      continue;
    }
    const report = await tlsReport(ctx, domain, date);
    if (!report || !(await claimTlsReport(ctx, domain, day, rua.join(',')))) continue;
    const gz = gzipSync(JSON.stringify(report));
    for (const uri of rua) {
      try {
        if (uri.toLowerCase().startsWith('mailto:')) await mailTlsReport(ctx, domain, report, gz, mailtoAddress(uri));
        else await post(ctx, o, uri, gz);
        run.sent++;
      } catch (err) {
        run.failed++;
        log.warn({ domain, rua: uri, err: (err as Error).message }, 'TLS report not sent');
      }
    }
  }
  return run;
}

const mailtoAddress = (uri: string) => decodeURIComponent(uri.slice('mailto:'.length).split('?')[0]);

async function txt(resolver: Resolver, name: string): Promise<string[]> {
  try {
    return (await resolver.resolveTxt(name)).map((r) => r.join(''));
  } catch {
    return [];
  }
}

/**
 * POSTs the gzip report (application/tlsrpt+gzip) to an `https:` rua: its host resolved by the service's resolver,
 * never to an address webhooks may not reach (loopback and private ones only with MTA_ALLOW_PRIVATE_WEBHOOKS), the
 * certificate verified for the host name (system CAs plus MTA_TLS_CA_FILE). 2xx is sent.
 */
async function post(ctx: Ctx, o: { resolver: Resolver; ca?: string }, uri: string, gz: Buffer): Promise<void> {
  const u = new URL(uri);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const ips = await resolveAddresses(o.resolver, host);
  const ip = ips.find((a) => !isBlockedIp(a, ctx.config.allowPrivateWebhooks));
  if (!ip) throw new Error(`${host} has no address a report may be sent to`);
  await new Promise<void>((resolve, reject) => {
    const req = https.request(
      {
        host: ip,
        port: u.port ? Number(u.port) : 443,
        path: `${u.pathname}${u.search}`,
        method: 'POST',
        servername: host,
        headers: { host: u.host, 'content-type': 'application/tlsrpt+gzip', 'content-length': gz.length },
        agent: false,
        rejectUnauthorized: true,
        ...(o.ca ? { ca: [...rootCertificates, o.ca] } : {}),
        timeout: 30_000,
      },
      (res) => {
        res.resume();
        const ok = res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
        res.on('end', () => (ok ? resolve() : reject(new Error(`HTTP ${res.statusCode} from ${host}`))));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`POST to ${host} timed out`)));
    req.on('error', reject);
    req.end(gz);
  });
}
