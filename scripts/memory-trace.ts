// Reads an MTA_MEMORY_TRACE file (src/lib/memory-trace.ts): the resident-set peak, and what each thread's V8 heap and
// the loop's queues held at it; with --timeline, one line per `--every` ms (default 1000) of the main thread's samples
// and the outbound worker's nearest one. `npx tsx scripts/memory-trace.ts <file> [--timeline] [--every=500]`.
import fs from 'node:fs';

type Sample = Record<string, number> & { thread: string; spaces: Record<string, number> } & { t: number };

const file = process.argv[2];
if (!file) {
  console.error('usage: tsx scripts/memory-trace.ts <MTA_MEMORY_TRACE file> [--timeline] [--every=ms]');
  process.exit(2);
}
const every = Number(/--every=(\d+)/.exec(process.argv.join(' '))?.[1] ?? 1000);
const samples = fs
  .readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Sample);
const main = samples.filter((s) => s.thread === 'main');
const worker = samples.filter((s) => s.thread === 'worker');
if (!main.length) throw new Error(`${file}: no samples of the main thread`);
const t0 = main[0].t;

/** The worker's sample nearest in time (within 300 ms), if it was running then. */
const workerAt = (t: number) => {
  let best: Sample | undefined;
  for (const w of worker) if (!best || Math.abs(w.t - t) < Math.abs(best.t - t)) best = w;
  return best && Math.abs(best.t - t) <= 300 ? best : undefined;
};
const heap = (s: Sample | undefined) =>
  s
    ? `heap ${s.heapUsed}/${s.heapTotal} (new ${s.spaces.new ?? '?'}, old ${s.spaces.old ?? '?'}, lo ${s.spaces.large_object ?? '?'}, code ${s.spaces.code ?? '?'}) ext ${s.external} ab ${s.arrayBuffers}`
    : 'not running';
const counts = (s: Sample) =>
  ['held', 'queued', 'active', 'reserved', 'preparing', 'signing', 'sending']
    .filter((k) => s[k] !== undefined)
    .map((k) => `${k} ${s[k]}`)
    .join(' ');
const line = (s: Sample) =>
  `${((s.t - t0) / 1000).toFixed(1).padStart(6)} s  rss ${s.rss} (anon ${s.anon}, file ${s.file})  main ${heap(s)}  worker ${heap(workerAt(s.t))}  ${counts(s)}`;

const peak = main.reduce((a, b) => (b.rss > a.rss ? b : a));
console.log(
  `${main.length} main-thread samples, ${worker.length} worker samples; VmHWM at the end ${main.at(-1)!.hwm} MiB`,
);
console.log(`peak RSS sample:\n${line(peak)}`);
const last = main.at(-1)!;
console.log(`last sample:\n${line(last)}`);
if (process.argv.includes('--timeline')) {
  let next = t0;
  for (const s of main)
    if (s.t >= next || s === peak) {
      console.log(line(s));
      next = s.t + every;
    }
}
