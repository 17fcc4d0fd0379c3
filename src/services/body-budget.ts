// The in-flight body budget (MTA_MAX_INFLIGHT_BODY_BYTES): request bodies being read or parsed at once (HTTP API,
// admin API, SMTP submission DATA) share one budget per process, counted from Content-Length (or SIZE=) when given
// and as read otherwise. A body that would pass it is refused (503 server_busy / 451 4.3.2) instead of buffered.
// One budget per running service (keyed by its store), so that the HTTP and SMTP listeners of a process share it.
import { ApiError } from '../core/errors.js';
import type { DB } from '../store/db.js';
import type { Ctx } from './context.js';

/** Bytes held for one body; `grow` takes more as it is read, `release` gives all back (once; later calls do nothing). */
export interface Reservation {
  readonly bytes: number;
  grow(n: number): boolean;
  release(): void;
}

export class BodyBudget {
  private used = 0;
  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.used;
  }

  /** Whether `n` more bytes fit now (nothing is taken). */
  fits(n: number): boolean {
    return this.used + n <= this.limit;
  }

  /** Takes `n` bytes; null (nothing taken) when they do not fit. */
  reserve(n: number): Reservation | null {
    if (!this.fits(n)) return null;
    this.used += n;
    let bytes = n;
    let open = true;
    return {
      get bytes() {
        return bytes;
      },
      grow: (more) => {
        if (!open || !this.fits(more)) return false;
        this.used += more;
        bytes += more;
        return true;
      },
      release: () => {
        if (!open) return;
        open = false;
        this.used -= bytes;
      },
    };
  }
}

const budgets = new WeakMap<DB, BodyBudget>();

export function bodyBudget(ctx: Ctx): BodyBudget {
  let b = budgets.get(ctx.db);
  if (!b) budgets.set(ctx.db, (b = new BodyBudget(ctx.config.maxInflightBodyBytes)));
  return b;
}

/** Seconds a refused client is told to wait (Retry-After). */
export const BUSY_RETRY_AFTER = 1;

export const serverBusy = () =>
  new ApiError(
    'api_error',
    'server_busy',
    `The service is reading as many request bodies as it holds at once (MTA_MAX_INFLIGHT_BODY_BYTES); retry after ${BUSY_RETRY_AFTER} s.`,
  );
