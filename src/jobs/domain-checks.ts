// The scheduled DNS re-check of every sending domain (MTA_DNS_CHECK_CRON), as a Component (jobs/cron-job.ts).
import type { Ctx } from '../services/context.js';
import { checkAllDomains } from '../services/domain-checks.js';
import { cronJob, type CronJob } from './cron-job.js';

export type DomainCheckJob = CronJob;

export function domainCheckJob(ctx: Ctx, expr = ctx.config.dnsCheckCron): DomainCheckJob {
  return cronJob(ctx, {
    name: 'domain-checks',
    expr,
    variable: 'MTA_DNS_CHECK_CRON',
    run: checkAllDomains,
    done: (n) => ({ domains: n }),
    what: 'domain re-check',
  });
}
