// The scheduled DNS re-check of every sending domain (MTA_DNS_CHECK_CRON, node-cron 4), as a Component:
// runs never overlap (noOverlap), and stop() ends the schedule and waits for a run in progress.
import { schedule, validate, type ScheduledTask } from 'node-cron';
import type { Component } from '../types/component.js';
import type { Ctx } from '../services/context.js';
import { checkAllDomains } from '../services/domains.js';
import { onOneNode } from '../services/locks.js';

export interface DomainCheckJob extends Component {
  runs: number;
  active: number;
  maxActive: number;
}

export function domainCheckJob(ctx: Ctx, expr = ctx.config.dnsCheckCron): DomainCheckJob {
  const log = ctx.log.child({ component: 'domain-checks' });
  let task: ScheduledTask | null = null;
  let running: Promise<unknown> | null = null;
  const job = {
    name: 'domain-checks',
    runs: 0,
    active: 0,
    maxActive: 0,
    async start() {
      if (!validate(expr)) throw new Error(`invalid MTA_DNS_CHECK_CRON ${JSON.stringify(expr)}`);
      task = schedule(
        expr,
        () => {
          job.maxActive = Math.max(job.maxActive, ++job.active);
          const run = onOneNode(ctx, 'domain-checks', () => checkAllDomains(ctx)).then(
            (n) => {
              job.runs++;
              log.debug({ domains: n }, n === null ? 'domain re-check left to another node' : 'domain re-check done');
            },
            (err) => log.error({ err }, 'domain re-check failed'),
          );
          running = run.finally(() => {
            job.active--;
            running = null;
          });
          return running;
        },
        { name: 'domain-checks', noOverlap: true, logger: cronLogger(log) },
      );
    },
    async stop() {
      await task?.stop();
      await task?.destroy();
      task = null;
      await running;
    },
  };
  return job;
}

function cronLogger(log: Ctx['log']) {
  return {
    info: (m: string) => log.debug(m),
    warn: (m: string) => log.warn(m),
    error: (m: string | Error, err?: Error) => log.error({ err: err ?? m }, String(m)),
    debug: (m: string | Error) => log.debug(String(m)),
  };
}
