// IP warm-up: a warming IP's cap today per site from `warmup.schedule` (entry d = day d from 0) and its start;
// days are UTC calendar days; after the last entry the IP is warm (no cap). Pure: `now` (ms) is passed in.

export const DAY_MS = 86_400_000;

/** A warming IP: when its warm-up started and at which schedule day (`mta ip warmup IP --day N`). */
export interface Warmup {
  startedAt: number;
  startDay: number;
}

/** UTC day number of a time. */
export const utcDay = (now: number) => Math.floor(now / DAY_MS);

/** The start of the next UTC day: when today's caps reset. */
export const nextDayAt = (now: number) => (utcDay(now) + 1) * DAY_MS;

/** The warm-up day of the IP at `now`: its start day plus the UTC days since it started. */
export function warmupDay(w: Warmup, now: number): number {
  return w.startDay + Math.max(0, utcDay(now) - utcDay(w.startedAt));
}

/** Today's cap per site of an IP (null: warm, no cap). `w` null means the IP is not warming. */
export function capToday(schedule: readonly number[], w: Warmup | null | undefined, now: number): number | null {
  if (!w) return null;
  const d = warmupDay(w, now);
  return d < schedule.length ? schedule[d] : null;
}
