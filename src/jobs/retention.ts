// The hourly retention job (services/retention.ts decides what expires). A Component; runs never overlap.
import { schedule, type ScheduledTask } from 'node-cron';
import type { Component } from '../types/component.js';
import type { Ctx } from '../services/context.js';
import { runRetention } from '../services/retention.js';
import { onOneNode } from '../services/locks.js';

export function retentionJob(ctx: Ctx, expr = '17 * * * *'): Component {
  const log = ctx.log.child({ component: 'retention' });
  let task: ScheduledTask | null = null;
  return {
    name: 'retention',
    async start() {
      task = schedule(
        expr,
        () =>
          onOneNode(ctx, 'retention', () => runRetention(ctx)).then(
            (r) => r && log.info(r, 'retention pass'),
            (err) => log.error({ err }, 'retention pass failed'),
          ),
        { name: 'retention', noOverlap: true },
      );
    },
    async stop() {
      await task?.stop();
      await task?.destroy();
      task = null;
    },
  };
}
