// The store's health for /healthz and the adapters that meet its errors (store/write-health.ts).
import { noteWriteError, writeFailure } from '../store/write-health.js';
import type { Ctx } from './context.js';

/** Called with an error a request or a session could not recover from: marks the store failing if it says so. */
export function noteStoreError(app: Ctx, err: unknown): void {
  if (noteWriteError(app.db, err)) app.log.error({ err }, 'the store cannot write');
}

/** null while the store writes; otherwise the reason /healthz gives. */
export const storeWriteFailure = (app: Ctx): string | null => writeFailure(app.db, app.now());
