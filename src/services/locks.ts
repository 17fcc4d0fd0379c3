// Scheduled work that runs on one node at a time when several share one PostgreSQL database: a node that finds
// the job's lock taken skips this run (another node is doing it). On SQLite there is one node: always runs.
import { tryLockJob, unlockJob } from '../store/locks.js';
import type { Ctx } from './context.js';
import { runNow } from '../store/op.js';

/** Runs fn unless another node holds the job's lock; null when skipped. */
export async function onOneNode<T>(ctx: Ctx, job: string, fn: () => T | Promise<T>): Promise<T | null> {
  if (!(await runNow(tryLockJob(ctx.db, job)))) {
    ctx.log.debug({ job }, 'job skipped: another node runs it');
    return null;
  }
  try {
    return await fn();
  } finally {
    await runNow(unlockJob(ctx.db, job));
  }
}
