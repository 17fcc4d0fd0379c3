// Linearity by ratios, not by a wall-clock bound a loaded box can stretch: the median time of a few runs on an
// input of size n against that on size n / 8. Linear work grows ~8×, quadratic ~64×.

/** Median wall time in ms of `runs` calls of `fn`, after one warm-up call. */
export function medianMs(fn: () => unknown, runs = 5): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

/**
 * How `fn`'s time grows from an input of size n / 8 to one of size n (`build(size)` makes the input): the two medians
 * and whether the larger stays within `factor` × 8 of the smaller (plus `slackMs` for timer granularity and a stray
 * collection), i.e. linear with room to spare, where a quadratic scan takes 64×.
 */
export function growth<T>(
  build: (size: number) => T,
  fn: (input: T) => unknown,
  n: number,
  { factor = 2.5, slackMs = 3 } = {},
): { smallMs: number; bigMs: number; linear: boolean } {
  const small = build(Math.round(n / 8));
  const big = build(n);
  const smallMs = medianMs(() => fn(small));
  const bigMs = medianMs(() => fn(big));
  return { smallMs, bigMs, linear: bigMs <= 8 * factor * smallMs + slackMs };
}
