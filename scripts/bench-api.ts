// API benchmark: sustained POST /v1/emails accept rate (durable 202s) and latency percentiles,
// measured with autocannon against the service running as a child process. BENCH_CONNECTIONS
// sets autocannon's connections (default 32): with more clients the figure shows capacity rather than latency.
import autocannon from 'autocannon';
import {
  startChild,
  mta,
  fmt,
  memoryOf,
  dbCountersOf,
  SIGNIN_EMAIL,
  cpuSecondsOf,
  threadCpuOf,
  poolCountersOf,
  poolReport,
  pgServerCpu,
} from './bench-lib.js';

export async function benchApi(opts: { seconds?: number; connections?: number } = {}) {
  const child = await startChild();
  try {
    mta(child, 'team', 'create', 'bench');
    const key = mta(child, 'key', 'create', '--team', 'bench');
    const body = SIGNIN_EMAIL;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    await autocannon({ url: `${child.http}/v1/emails`, method: 'POST', headers, body, connections: 8, duration: 2 }); // warm-up
    const pg = process.env.BENCH_ENGINE === 'pg' || !!process.env.BENCH_PG_URL;
    const db0 = pg ? await dbCountersOf(child) : null;
    const pool0 = pg ? await poolCountersOf(child) : null;
    const pgCpu0 = pg ? await pgServerCpu() : NaN;
    const cpu0 = { service: cpuSecondsOf(child.proc.pid), threads: new Map(threadCpuOf(child.proc.pid)) };
    const r = await autocannon({
      url: `${child.http}/v1/emails`,
      method: 'POST',
      headers,
      body,
      connections: opts.connections ?? Number(process.env.BENCH_CONNECTIONS ?? 32),
      duration: opts.seconds ?? 10,
    });
    const ok = r['2xx'];
    const serviceCpu = cpuSecondsOf(child.proc.pid) - cpu0.service;
    const threads = threadCpuOf(child.proc.pid)
      .map(([name, s]) => [name, s - (cpu0.threads.get(name) ?? 0)] as const)
      .filter(([, s]) => s >= 0.05);
    const pgCpu = pg ? (await pgServerCpu()) - pgCpu0 : NaN;
    const result = {
      accepted_per_s: ok / (opts.seconds ?? 10),
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: r.timeouts,
      latency_ms: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
      connections: opts.connections ?? Number(process.env.BENCH_CONNECTIONS ?? 32),
      seconds: opts.seconds ?? 10,
    };
    console.log(
      `API  POST /v1/emails: ${fmt(result.accepted_per_s, 0)} accepted/s (202), non-2xx ${r.non2xx}, errors ${r.errors}; latency p50 ${result.latency_ms.p50} ms, p90 ${result.latency_ms.p90} ms, p99 ${result.latency_ms.p99} ms, max ${result.latency_ms.max} ms (${result.connections} connections, ${result.seconds} s, test key: delivery simulated in the same process)`,
    );
    if (db0) {
      // What the main connection (synchronous, each round trip holding the event loop) carried per accept; the
      // /metrics read between the two counts is in it (a few statements).
      const db1 = await dbCountersOf(child);
      const per = (k: 'statements' | 'trips' | 'wait') => (db1[k] - db0[k]) / Math.max(1, ok);
      console.log(
        `API  PostgreSQL main connection per accepted email: ${fmt(per('statements'), 3)} statements, ${fmt(per('trips'), 3)} round trips, ${fmt(per('wait') * 1e6, 0)} µs main-thread wait (${db1.statements - db0.statements} statements in all)`,
      );
    }
    // Where an accept's CPU goes: the service by thread and, on PostgreSQL, the server (same box: they share the cores)
    console.log(
      `API  CPU per accepted email: service ${fmt((serviceCpu / Math.max(1, ok)) * 1e6, 0)} µs (${threads.map(([name, s]) => `${name} ${fmt(s, 1)} s`).join(', ')})${pg ? `, PostgreSQL server ${fmt((pgCpu / Math.max(1, ok)) * 1e6, 0)} µs` : ''}`,
    );
    const pool1 = pg ? await poolCountersOf(child) : null;
    if (pool0 && pool1)
      console.log(`API  the pool per accepted email: ${poolReport(pool0, pool1, Math.max(1, ok), result.seconds)}`);
    console.log(`API  service after the run: ${await memoryOf(child)}`);
    return result;
  } finally {
    await child.stop();
  }
}
