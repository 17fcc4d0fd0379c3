// The store's health for /healthz and the adapters that meet its errors (store/write-health.ts).
import { isStoreUnavailable, noteWriteError, unreachable, writeFailure } from '../store/write-health.js';
import type { Ctx } from './context.js';

/** Called with an error a request or a session could not recover from: marks the store failing if it says so. */
export function noteStoreError(app: Ctx, err: unknown): void {
  if (noteWriteError(app.db, err)) app.log.error({ err }, 'the store cannot write');
}

/** null while the store writes (and reaches its database); otherwise the reason /healthz gives. */
export function storeFailure(app: Ctx): string | null {
  const lost = unreachable(app.db);
  if (lost) return `the store cannot reach its database: ${lost}`;
  const failure = writeFailure(app.db, app.now());
  return failure && `the store cannot write: ${failure}`;
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
