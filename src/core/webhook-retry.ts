// Webhook retry policy as data (decisions.md): eight attempts within about 32 hours, every delay
// scaled by MTA_WEBHOOK_RETRY_MIN_SECONDS / 5; which answers end an outbox row and which retry. Pure.
export const RETRY_DELAYS_SECONDS = [5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 14 * 3600] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** An endpoint whose deliveries fail without a success for this long is disabled… */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3600 * 1000;
/** …or once this many deliveries in a row ended failed. */
export const DISABLE_AFTER_FAILED_DELIVERIES = 100;

/** Delay in ms before the attempt after attempt number `attempt` (1-based), or null when exhausted. */
export function retryDelayMs(attempt: number, minSeconds: number): number | null {
  const base = RETRY_DELAYS_SECONDS[attempt - 1];
  if (base === undefined) return null;
  const jitter = 1 + (Math.random() - 0.5) * 0.1; // ±5 %, so a receiver's outage does not end in a thundering herd
  return Math.max(1, Math.round(base * (minSeconds / 5) * 1000 * (attempt === 1 ? 1 : jitter)));
}

export type AttemptVerdict = 'succeeded' | 'retry' | 'failed';

/** 2xx ends well; 5xx, 408, 429, timeouts and connection errors retry; anything else ends failed. */
export function verdictOf(statusCode: number | null): AttemptVerdict {
  if (statusCode === null) return 'retry';
  if (statusCode >= 200 && statusCode < 300) return 'succeeded';
  if (statusCode >= 500 || statusCode === 408 || statusCode === 429) return 'retry';
  return 'failed';
}
