// A scheduled job (node-cron 4) as a Component: runs never overlap (noOverlap), run on one node at a time when
// several share a PostgreSQL store (services/locks.ts), and stop() ends the schedule and waits for a run in progress.
import { schedule, validate, type ScheduledTask } from 'node-cron';
import type { Component } from '../types/component.js';
import type { Ctx } from '../services/context.js';
import { onOneNode } from '../services/locks.js';

export interface CronJob extends Component {
  runs: number;
  active: number;
  maxActive: number;
}

export interface CronJobSpec<T> {
  name: string;
  /** the cron expression, and the variable that sets it (named when it is invalid) */
  expr: string;
  variable: string;
  run: (ctx: Ctx) => Promise<T>;
  /** the debug line of a finished run */
  done: (result: T) => Record<string, unknown>;
  what: string;
}

export function cronJob<T>(ctx: Ctx, spec: CronJobSpec<T>): CronJob {
  const log = ctx.log.child({ component: spec.name });
  let task: ScheduledTask | null = null;
  let running: Promise<unknown> | null = null;
  const job = {
    name: spec.name,
    runs: 0,
    active: 0,
    maxActive: 0,
    async start() {
      if (!validate(spec.expr)) throw new Error(`invalid ${spec.variable} ${JSON.stringify(spec.expr)}`);
      task = schedule(
        spec.expr,
        () => {
          job.maxActive = Math.max(job.maxActive, ++job.active);
          const run = onOneNode(ctx, spec.name, () => spec.run(ctx)).then(
            (r) => {
              job.runs++;
              if (r === null) log.debug(`${spec.what} left to another node`);
              else log.debug(spec.done(r), `${spec.what} done`);
            },
            (err) => log.error({ err }, `${spec.what} failed`),
          );
          running = run.finally(() => {
            job.active--;
            running = null;
          });
          return running;
        },
        { name: spec.name, noOverlap: true, logger: cronLogger(log) },
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
