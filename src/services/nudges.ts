// Wake-ups between the services and the components of this process: a service that made work for the delivery loop
// or the webhook dispatcher outside their own paths (recipients released or retried, inbound mail that posts
// webhooks) nudges them; the features register what a nudge does. One process serves a node (the HTTP workers that
// once shared it were retired: docs/async-store.md "HTTP workers: retired by measurement").
import type { DB } from '../store/db.js';
import { whenCommitted } from '../store/group-commit.js';

/** The component a nudge wakes: the delivery loop (new mail due), the webhook dispatcher (new outbox rows). */
export type Nudge = 'delivery' | 'webhooks';

const handlers = new WeakMap<DB, Map<Nudge, (() => void)[]>>();

/** Registers what a nudge of `kind` does (features: the loop's wake-up, the dispatcher's notify). */
export function onNudge(db: DB, kind: Nudge, fn: () => void): void {
  const m = handlers.get(db) ?? new Map<Nudge, (() => void)[]>();
  m.set(kind, [...(m.get(kind) ?? []), fn]);
  handlers.set(db, m);
}

/** Runs the handlers of `kind` now. */
export function nudged(db: DB, kind: Nudge): void {
  for (const fn of handlers.get(db)?.get(kind) ?? []) fn();
}

/**
 * fn once this process's writes so far are committed (or failed): after the open group-commit turn's COMMIT, or the
 * one sent without waiting (PostgreSQL); else on the next check phase. For a wake-up whose component reads them.
 */
export const afterWrites = (db: DB, fn: () => void): void => whenCommitted(db, fn);
