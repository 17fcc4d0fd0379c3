// The scheduled sending-IP health check (MTA_IP_CHECK_CRON, services/ip-health.ts), as a Component (jobs/cron-job.ts).
import type { Ctx } from '../services/context.js';
import { checkIps } from '../services/ip-health.js';
import { cronJob, type CronJob } from './cron-job.js';

export function ipCheckJob(ctx: Ctx, expr = ctx.config.ipCheckCron): CronJob {
  return cronJob(ctx, {
    name: 'ip-checks',
    expr,
    variable: 'MTA_IP_CHECK_CRON',
    run: checkIps,
    done: (ips) => ({ ips: ips.length, listed: ips.filter((x) => x.listings.some((l) => l.listed)).length }),
    what: 'sending-IP check',
  });
}
