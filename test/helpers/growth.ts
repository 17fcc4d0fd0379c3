// Linearity by ratios, not by a wall-clock bound a loaded box can stretch: the median CPU time of a few runs on an
// input of size n against that on size n / 8. Linear work grows ~8×, quadratic ~64×. CPU time (process.cpuUsage),
// not wall time: a process that waits for a core on a busy box is not charged for the wait, which stretches a long
// run more than a short one that fits in one time slice.
import fs from 'node:fs';

/** CPU time in ms (user + system) of one call of `fn`. */
function cpuMs(fn: () => unknown): number {
  const t = process.cpuUsage();
  fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

/**
 * CPU time in ms (user + system, every thread of the process) that `fn` took to settle: for a bound on work that a
 * loaded box cannot stretch (a process waiting for a core is not charged for the wait). Nothing else of the test
 * process may run meanwhile (mocha runs one test at a time per process).
 */
export async function cpuMsOf<T>(fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const t = process.cpuUsage();
  const value = await fn();
  const d = process.cpuUsage(t);
  return { ms: (d.user + d.system) / 1000, value };
}

/**
 * CPU time in ms of this process's main thread alone (its event loop), not its worker threads: Linux's per-thread
 * counters (/proc/self/task/PID/stat, in 10 ms ticks). For a test that the event loop was never kept busy long, in
 * a measure a loaded box does not stretch.
 */
export function mainThreadCpuMs(): number {
  const f = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const v = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(v[11]) + Number(v[12])) * 10; // utime + stime, fields 14 and 15
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * How `fn`'s time grows from an input of size n / 8 to one of size n (`build(size)` makes the input): the two medians
 * and whether the larger stays within `factor` × 8 of the smaller (plus `slackMs` for timer granularity and a stray
 * collection), i.e. linear with room to spare, where a quadratic scan takes 64×. Both sizes are run twice first
 * (the compiler's tiers), then in turns.
 */
export function growth<T>(
  build: (size: number) => T,
  fn: (input: T) => unknown,
  n: number,
  { factor = 2.5, slackMs = 3, runs = 7 } = {},
): { smallMs: number; bigMs: number; linear: boolean } {
  const small = build(Math.round(n / 8));
  const big = build(n);
  for (let i = 0; i < 2; i++) {
    fn(small);
    fn(big);
  }
  const s: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < runs; i++) {
    s.push(cpuMs(() => fn(small)));
    b.push(cpuMs(() => fn(big)));
  }
  const smallMs = median(s);
  const bigMs = median(b);
  return { smallMs, bigMs, linear: bigMs <= 8 * factor * smallMs + slackMs };
}
