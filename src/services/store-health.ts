// The store's health for /healthz and the adapters that meet its errors (store/write-health.ts).
import { isStoreUnavailable, noteWriteError, ping, unreachable, writeFailure } from '../store/write-health.js';
import { poolOf, runPooled } from '../store/pg/plan-driver.js';
import type { Ctx } from './context.js';

/** Called with an error a request or a session could not recover from: marks the store failing if it says so. */
export function noteStoreError(app: Ctx, err: unknown): void {
  if (noteWriteError(app.db, err)) app.log.error({ err }, 'the store cannot write');
}

/** null while the store writes (and reaches its database); otherwise the reason /healthz gives. */
export async function storeFailure(app: Ctx): Promise<string | null> {
  const lost = unreachable(app.db) ?? (await poolAway(app));
  if (lost) return `the store cannot reach its database: ${lost}`;
  const failure = writeFailure(app.db, app.now());
  return failure && `the store cannot write: ${failure}`;
}

/** How often /healthz asks the database on the pool, and how long it waits for the answer. */
const PROBE_EVERY_MS = 1000;
const PROBE_WAIT_MS = 5000;
const probes = new WeakMap<Ctx['db'], { at: number; away: Promise<string | null> }>();

/**
 * PostgreSQL with a pool: why the database does not answer there, or null. The synchronous connection no longer
 * carries steady work (docs/async-store.md "Session 22"), so it may not have met an outage that the pool's work
 * has: /healthz asks on the pool (`SELECT 1`, at most once a second, awaited: the event loop goes on).
 */
function poolAway(app: Ctx): Promise<string | null> {
  if (!poolOf(app.db)) return Promise.resolve(null);
  const now = performance.now();
  let p = probes.get(app.db);
  if (!p || now - p.at >= PROBE_EVERY_MS) probes.set(app.db, (p = { at: now, away: probe(app) }));
  return p.away;
}

async function probe(app: Ctx): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${PROBE_WAIT_MS / 1000} s`), PROBE_WAIT_MS);
  });
  try {
    return await Promise.race([runPooled(app.db, ping(app.db), 'other').then(() => null), late]);
  } catch (err) {
    return isStoreUnavailable(err) ? (err as Error).message : null;
  } finally {
    clearTimeout(timer);
  }
}

/** Seconds a client should wait before retrying what failed because the store was unavailable. */
export const STORE_RETRY_AFTER = 5;

export { isStoreUnavailable };

/**
 * For a loop that meets store errors on every turn while the database is away: logs the first error of an outage
 * (at error level) and the return, not every failed attempt. `failed` answers whether the error was a store outage.
 */
export function outageLog(log: Ctx['log'], what: string) {
  let since: number | null = null;
  return {
    failed(err: unknown): boolean {
      if (!isStoreUnavailable(err)) return false;
      if (since === null) {
        since = Date.now();
        log.error({ err }, `${what}: the store is unavailable; waiting for it (retried with back-off)`);
      }
      return true;
    },
    ok(): void {
      if (since === null) return;
      log.warn({ down_ms: Date.now() - since }, `${what}: the store is available again`);
      since = null;
    },
  };
}
