// MTA_MEMORY_TRACE=<file>: a diagnostic, never for production. Every thread that calls traceMemory appends one JSON
// line to the file every MTA_MEMORY_TRACE_MS (default 100): its V8 heap (used, committed, each space's committed
// size), the process's resident set (and its anonymous and file-backed parts), external memory and ArrayBuffers, and
// whatever `extra` counts (queues). Each worker thread has a V8 heap of its own: the delivery loop's thread and the
// outbound worker both write, named by `thread`. Read by scripts/memory-trace.ts (peak, and who held what at it).
import fs from 'node:fs';
import v8 from 'node:v8';

const mib = (n: number) => Math.round(n / 104857.6) / 10;

/** /proc/self/status's resident parts in MiB (Linux; empty elsewhere). */
function residentParts(): Record<string, number> {
  try {
    const st = fs.readFileSync('/proc/self/status', 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(st)?.[1] ?? NaN) / 1024;
    return { anon: Math.round(kb('RssAnon')), file: Math.round(kb('RssFile')), hwm: Math.round(kb('VmHWM')) };
  } catch {
    return {};
  }
}

/** Starts sampling this thread when MTA_MEMORY_TRACE is set; the function returned stops it (null: not set). */
export function traceMemory(thread: string, extra?: () => Record<string, number>): (() => void) | null {
  const file = process.env.MTA_MEMORY_TRACE;
  if (!file) return null;
  const sample = () => {
    const m = process.memoryUsage();
    const spaces: Record<string, number> = {};
    for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name.replace(/_space$/, '')] = mib(s.space_size);
    const line = {
      t: Date.now(),
      thread,
      rss: mib(m.rss),
      ...residentParts(),
      heapUsed: mib(m.heapUsed),
      heapTotal: mib(m.heapTotal),
      external: mib(m.external),
      arrayBuffers: mib(m.arrayBuffers),
      spaces,
      ...extra?.(),
    };
    // opened for each line (a worker thread that is terminated leaves no descriptor open); one write per line, so the
    // threads' lines do not interleave (O_APPEND)
    fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
  };
  const timer = setInterval(sample, Number(process.env.MTA_MEMORY_TRACE_MS ?? 100));
  timer.unref();
  sample();
  return () => clearInterval(timer);
}
