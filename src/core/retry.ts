// Retry schedule for deliveries: exponential backoff with jitter, between a minimum and a maximum
// delay, until the queue lifetime is over. Pure: the random draw is passed in.
export interface RetryPolicy {
  minSeconds: number;
  maxSeconds: number;
  lifetimeSeconds: number;
}

/** Delay in ms before attempt `attempt + 1`, given that `attempt` attempts (>= 1) were made. */
export function retryDelayMs(policy: RetryPolicy, attempt: number, random: number): number {
  const base = Math.min(policy.maxSeconds, policy.minSeconds * 2 ** Math.max(0, attempt - 1));
  const jitter = 0.8 + 0.4 * random; // ±20 %
  return Math.round(Math.min(policy.maxSeconds, base * jitter) * 1000);
}

/** Whether a recipient first queued at `firstAt` must give up instead of retrying at `nextAt`. */
export function expired(policy: RetryPolicy, firstAtMs: number, nextAtMs: number): boolean {
  return nextAtMs - firstAtMs > policy.lifetimeSeconds * 1000;
}
