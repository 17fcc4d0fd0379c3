// Delivery benchmark (issue 12): the real service (child process, `mta serve`, default settings) gets N live,
// DKIM-signed emails through its API and delivers them to a loopback sink (Postfix smtp-sink, else smtp-server in
// this process) found by a loopback DNS server. Prints msg/s from the first request to the last message received, the API p99
// during the run and the service's memory after. Runs: one domain; 5 domains on 5 sites; 5 sites queued before the
// start, with and without one site throttled. `--postfix` also runs ../shared/bench/postfix-bench.sh (takes over /etc/postfix) for the ratio.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import autocannon from 'autocannon';
import net from 'node:net';
import { execFileSync, spawn } from 'node:child_process';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { TestDns } from '../test/helpers/dns.js';
import { TestCa } from '../test/helpers/test-ca.js';
import { insertVerifiedDomain } from '../test/helpers/factories.js';
import { openDb, sql } from '../src/store/db.js';
import { all } from '../src/store/op.js';
import { loadConfig } from '../src/config/load.js';
import { createTeamPlan, createKeyPlan } from '../src/services/keys.js';
import { runSync } from '../src/store/op.js';
import { addCreditsPlan } from '../src/services/credits.js';
import {
  startChild,
  pct,
  fmt,
  memoryOf,
  cpuSecondsOf,
  threadCpuOf,
  benchDatabaseUrl,
  dbCountersOf,
  pgServerCpu,
  poolCountersOf,
  poolReport,
} from './bench-lib.js';

interface Sink {
  kind: string;
  port: number;
  /** the address of domain i's MX */
  ip(i: number): string;
  times: Map<string, number[]>;
  count: number;
  /** Forgets what arrived so far (after the warm-up). */
  reset(): void;
  stop(): Promise<void>;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });

/**
 * Postfix's smtp-sink (C; the receiver of the Postfix reference too), one per domain on 127.0.0.(2+i), one port:
 * `-c` prints "mesg=N" after every message, timed here. null when absent (or BENCH_SINK=node).
 */
async function startPostfixSink(domains: string[]): Promise<Sink | null> {
  const bin = '/usr/sbin/smtp-sink';
  if (!fs.existsSync(bin) || process.env.BENCH_SINK === 'node') return null;
  const port = await freePort();
  const times = new Map<string, number[]>();
  const state = { count: 0 };
  const user = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
  const procs = domains.map((d, i) => {
    const p = spawn(bin, ['-c', ...user, '-h', 'sink.bench.test', `127.0.0.${2 + i}:${port}`, '1000'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const l: number[] = [];
    times.set(d, l);
    let seen = 0; // smtp-sink's count is cumulative
    p.stdout.on('data', (b: Buffer) => {
      const all = [...String(b).matchAll(/mesg=(\d+)/g)];
      const now = Date.now();
      for (let m = Number(all.at(-1)?.[1] ?? 0); seen < m; seen++, state.count++) l.push(now);
    });
    return p;
  });
  await new Promise((r) => setTimeout(r, 300)); // bound and listening
  return {
    kind: 'Postfix smtp-sink',
    port,
    ip: (i) => `127.0.0.${2 + i}`,
    times,
    get count() {
      return state.count;
    },
    reset: () => {
      for (const l of times.values()) l.length = 0;
      state.count = 0;
    },
    stop: async () => {
      for (const p of procs) p.kill();
    },
  };
}

/**
 * A sink that accepts everything at once; records when each message arrived, per recipient domain. `tls`: it offers
 * STARTTLS with this certificate (the MTA-STS runs).
 */
async function startSink(tls?: { key: string; cert: string }): Promise<Sink> {
  const times = new Map<string, number[]>();
  const state = { count: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(tls ?? {}),
    logger: false,
    size: 0,
    onData: (s, session, cb) => {
      s.resume();
      s.on('end', () => {
        const d = session.envelope.rcptTo[0]?.address.split('@')[1] ?? '';
        const l = times.get(d) ?? [];
        l.push(Date.now());
        times.set(d, l);
        state.count++;
        cb();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    kind: 'smtp-server in the bench process',
    ip: () => '127.0.0.1',
    port: (server.server.address() as { port: number }).port,
    times,
    get count() {
      return state.count;
    },
    reset: () => {
      times.clear();
      state.count = 0;
    },
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

interface Run {
  name: string;
  domains: string[];
  shaping?: Record<string, unknown>;
  throttledDomain?: string;
  prequeue?: boolean;
  /** MTA-STS runs: the sink offers STARTTLS with a certificate of a CA made here; `on`: each domain's enforce policy
   * cached in the store (its `_mta-sts` id published), MTA_MTA_STS=on; `off`: MTA_MTA_STS=off (opportunistic TLS) */
  sts?: 'on' | 'off';
}

async function runOnce(run: Run, n: number): Promise<Record<string, number>> {
  const dns = await new TestDns().start();
  // Each domain has its own MX host: one site per domain (unknown sites, named by their MX host).
  const ca = run.sts ? new TestCa() : null;
  const sink = ca
    ? await startSink(ca.leaf(run.domains.map((d) => `mx.${d}`)))
    : ((await startPostfixSink(run.domains)) ?? (await startSink()));
  run.domains.forEach((d, i) => {
    dns.set(d, { MX: [{ exchange: `mx.${d}`, priority: 10 }] });
    dns.set(`mx.${d}`, { A: [sink.ip(i)] });
  });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mta-bench-delivery-'));
  const env: Record<string, string> = {
    MTA_DATA_DIR: dataDir,
    MTA_DNS_SERVERS: dns.server,
    MTA_OUTBOUND_PORT: String(sink.port),
    MTA_LOG_LEVEL: 'info',
    // No scheduled DNS re-check of the sender domain during the run (it would fail it half-way).
    MTA_DNS_CHECK_CRON: '0 0 1 1 *',
    // glibc's malloc arenas, passed on to try their effect on RSS
    ...(process.env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}),
    // libuv's pool size (RSA signing and file work), passed on to try its effect
    ...(process.env.UV_THREADPOOL_SIZE ? { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE } : {}),
    // MTA_FROM_SOURCE=1: the service runs src/ through tsx instead of the bundle (bin/mta.js), for comparison
    ...(process.env.MTA_FROM_SOURCE ? { MTA_FROM_SOURCE: process.env.MTA_FROM_SOURCE } : {}),
  };
  if (ca) {
    env.MTA_TLS_CA_FILE = ca.caFile;
    env.MTA_MTA_STS = run.sts!;
    for (const d of run.domains) dns.set(`_mta-sts.${d}`, { TXT: ['v=STSv1; id=bench1'] });
  }
  if (run.shaping) {
    const f = path.join(dataDir, 'shaping.json');
    fs.writeFileSync(f, JSON.stringify(run.shaping));
    env.MTA_SHAPING_FILE = f;
  } else if (process.env.BENCH_SHAPING_FILE) env.MTA_SHAPING_FILE = process.env.BENCH_SHAPING_FILE; // to try other limits
  const databaseUrl = await benchDatabaseUrl();
  if (databaseUrl) env.MTA_DATABASE_URL = databaseUrl;
  const db = openDb(dataDir, { databaseUrl });
  const ctx = { db, config: loadConfig({ env }), now: Date.now, log: pino({ level: 'silent' }) };
  const team = runSync(createTeamPlan(ctx, 'bench'));
  const body = (i: number) =>
    JSON.stringify({
      from: 'Bench <app@sender.bench>',
      to: `user${i}@${run.domains[i % run.domains.length]}`,
      subject: `Receipt #${i}`,
      text: `Thanks for your order ${i}.\n`.repeat(10),
      html: `<p>Thanks for your order <b>${i}</b>.</p>`.repeat(10),
    });
  const key = runSync(createKeyPlan(ctx, team.id, { mode: 'live', scopes: ['emails:send'] }));
  runSync(addCreditsPlan(ctx, team.id, n + 10, null));
  const dom = insertVerifiedDomain(db, team.id, 'sender.bench');
  if (ca) {
    // The policies as a fetch would have cached them: no HTTPS fetch during the run (the id is the TXT record's).
    const { saveSts } = await import('../src/services/tls-policy.js');
    for (const d of run.domains)
      await saveSts(ctx, d, 'bench1', { mode: 'enforce', mx: [`mx.${d}`], max_age: 86400 * 7 });
  }
  dns.set(`${dom.selector}._domainkey.sender.bench`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
  // BENCH_PREQUEUE=1: the emails are queued before the service starts (the engine alone: drain rate).
  const pre = run.prequeue === true || process.env.BENCH_PREQUEUE === '1';
  if (pre) {
    const { submitEmail } = await import('../src/services/emails.js');
    const principal = { keyId: 'bench', teamId: team.id, mode: 'live' as const, scopes: new Set(['emails:send']) };
    for (let i = 0; i < n; i++) await submitEmail(ctx, principal, JSON.parse(body(i)));
  }
  db.close();
  const child = await startChild(env);
  const headers = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };
  // node:http with keep-alive (fetch costs this process about twice the CPU per request, on the same 2 cores).
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const post = (payload: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(`${child.http}/v1/emails`, { method: 'POST', headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end(payload);
    });
  const lat: number[] = [];
  let next = 0;
  let end = n;
  const worker = async () => {
    while (next < end) {
      const i = next++;
      const s = performance.now();
      const r = await post(body(i));
      if (r.status !== 202) throw new Error(`POST /v1/emails: ${r.status} ${r.text}\n${child.logTail.join('\n')}`);
      lat.push(performance.now() - s);
    }
  };
  const clients = Number(process.env.BENCH_CLIENTS ?? 16);
  // The API clients: autocannon by default (BENCH_CLIENT=http: node:http, one request after another per client). The
  // clients share the 2 cores with the service, as Postfix's reference shares them with smtp-source (C); autocannon
  // takes about half the CPU of node:http for the same requests (0.8–1.1 s against 1.6–1.7 s per 10,000).
  // autocannon's percentiles and the time of its last answer
  const measured: { latency: { p50: number; p99: number } | null; lastAnswer: number; answers: number[] } = {
    latency: null,
    lastAnswer: 0,
    answers: [],
  };
  const postWithAutocannon = async () => {
    let i = 0;
    const r = await new Promise<autocannon.Result>((resolve, reject) => {
      const run = autocannon(
        {
          url: `${child.http}/v1/emails`,
          method: 'POST',
          headers,
          connections: clients,
          amount: n,
          requests: [{ setupRequest: (req) => ({ ...req, body: body(i++) }) }],
        },
        (err, result) => (err ? reject(err) : resolve(result)),
      );
      // the last answer's time (autocannon settles a little after it)
      run.on('response', () => measured.answers.push((measured.lastAnswer = Date.now())));
    });
    if (r['2xx'] !== n) throw new Error(`POST /v1/emails: ${r['2xx']} of ${n} accepted\n${child.logTail.join('\n')}`);
    measured.latency = { p50: r.latency.p50, p99: r.latency.p99 };
  };
  // Un-timed warm-up, as the Postfix reference does (postfix-bench.sh, PFB_WARMUP=200): that many emails posted and
  // delivered first, so the timed run starts from a running service (code compiled, connections known), not a cold one.
  const warmup = pre ? 0 : Number(process.env.BENCH_WARMUP ?? 200);
  if (warmup > 0) {
    next = n;
    end = n + warmup;
    await Promise.all(Array.from({ length: clients }, worker));
    const until = Date.now() + 60_000;
    while (sink.count < warmup && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 1500)); // the loop settles (results written, idle trim)
    sink.reset();
    lat.length = 0;
    next = 0;
    end = n;
  }
  const load = os.loadavg()[0];
  const cpu0 = {
    bench: process.cpuUsage(),
    service: cpuSecondsOf(child.proc.pid),
    threads: new Map(threadCpuOf(child.proc.pid)),
  };
  const db0 = databaseUrl ? await dbCountersOf(child) : null;
  const pool0 = databaseUrl ? await poolCountersOf(child) : null;
  const pgCpu0 = databaseUrl ? await pgServerCpu() : NaN;
  const traceFile = process.env.BENCH_PG_TRACE;
  const traceFrom = traceFile && fs.existsSync(traceFile) ? fs.statSync(traceFile).size : 0;
  const t0 = Date.now();
  if (pre) {
    /* queued before the start */
  } else if (process.env.BENCH_CLIENT === 'http') await Promise.all(Array.from({ length: clients }, worker));
  else await postWithAutocannon();
  const posted = measured.lastAnswer || Date.now();
  const deadline = Date.now() + 600_000;
  while (sink.count < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const last = Math.max(...[...sink.times.values()].flat());
  const benchCpu = process.cpuUsage(cpu0.bench);
  const serviceCpu = cpuSecondsOf(child.proc.pid) - cpu0.service;
  lat.sort((a, b) => a - b);
  const out: Record<string, number> = {
    received: sink.count,
    rate: sink.count / ((last - t0) / 1000),
    api_p50: measured.latency?.p50 ?? pct(lat, 50) ?? NaN,
    api_p99: measured.latency?.p99 ?? pct(lat, 99) ?? NaN,
  };
  for (const [d, ts] of sink.times)
    if (d !== run.throttledDomain) out[`rate_${d}`] = ts.length / ((Math.max(...ts) - t0) / 1000);
  console.log(
    `delivery[${run.name}]: ${sink.count}/${n} received in ${fmt((last - t0) / 1000, 2)} s (all posted after ${fmt((posted - t0) / 1000, 2)} s): ${fmt(out.rate, 0)} msg/s (first request → last message); API p50 ${fmt(out.api_p50, 1)} ms, p99 ${fmt(out.api_p99, 1)} ms`,
  );
  if (process.env.BENCH_TRACE === '1') {
    // messages received per 500 ms since the first request: where the run stalls
    const per500 = (times: number[]) => {
      const bins: number[] = [];
      for (const t of times) bins[Math.floor((t - t0) / 500)] = (bins[Math.floor((t - t0) / 500)] ?? 0) + 1;
      return Array.from(bins, (b) => b ?? 0).join(' ');
    };
    console.log(`delivery[${run.name}]: per 500 ms: ${per500([...sink.times.values()].flat())}`);
    // and the API's answers per 500 ms: whether the accepts or the deliveries set the pace
    if (measured.answers.length) console.log(`delivery[${run.name}]: 202s per 500 ms: ${per500(measured.answers)}`);
  }
  if (run.domains.length > 1)
    console.log(
      `delivery[${run.name}]: per domain msg/s ${[...sink.times].map(([d, ts]) => `${d} ${fmt(ts.length / ((Math.max(...ts) - t0) / 1000), 0)}`).join(', ')}`,
    );
  console.log(
    `delivery[${run.name}]: load average ${fmt(load, 2)} at the start; sink: ${sink.kind}; CPU during the run: service ${fmt(serviceCpu, 1)} s, bench process ${fmt((benchCpu.user + benchCpu.system) / 1e6, 1)} s`,
  );
  if (db0) {
    // PostgreSQL per delivered email (the timed run: its accepts, deliveries and whatever else ran meanwhile)
    const db1 = await dbCountersOf(child);
    const per = (k: 'statements' | 'trips' | 'wait') => (db1[k] - db0[k]) / sink.count;
    console.log(
      `delivery[${run.name}]: PostgreSQL per delivered email: ${fmt(per('statements'), 2)} statements, ${fmt(per('trips'), 2)} round trips, ${fmt(per('wait') * 1000, 2)} ms main-thread wait (${fmt(db1.wait - db0.wait, 1)} s in all)`,
    );
    const pool1 = await poolCountersOf(child);
    if (pool0 && pool1)
      console.log(
        `delivery[${run.name}]: the pool per delivered email: ${poolReport(pool0, pool1, sink.count, (last - t0) / 1000)}`,
      );
    const pgCpu = (await pgServerCpu()) - pgCpu0;
    console.log(
      `delivery[${run.name}]: PostgreSQL server CPU during the run: ${fmt(pgCpu, 1)} s (${fmt((pgCpu / sink.count) * 1e6, 0)} µs per delivered email)`,
    );
  }
  if (traceFile && fs.existsSync(traceFile)) {
    // the timed run's part of the trace, on its own (scripts/pg-trace-summary.ts reads it)
    const size = fs.statSync(traceFile).size;
    const fd = fs.openSync(traceFile, 'r');
    const buf = Buffer.alloc(size - traceFrom);
    fs.readSync(fd, buf, 0, buf.length, traceFrom);
    fs.closeSync(fd);
    fs.writeFileSync(`${traceFile}.run`, buf);
    console.log(`delivery[${run.name}]: the timed run's round trips: ${traceFile}.run`);
  }
  const threads = threadCpuOf(child.proc.pid)
    .map(([name, s]) => [name, s - (cpu0.threads.get(name) ?? 0)] as const)
    .filter(([, s]) => s >= 0.05);
  console.log(
    `delivery[${run.name}]: service CPU by thread: ${threads.map(([name, s]) => `${name} ${fmt(s, 1)} s`).join(', ')}`,
  );
  console.log(`delivery[${run.name}]: service right after the run: ${await memoryOf(child)}`);
  const taken = [
    ...(await (await fetch(`${child.http}/metrics`)).text()).matchAll(
      /^mta_outbound_taken_total\{by="(\w+)"\} (\d+)/gm,
    ),
  ];
  console.log(`delivery[${run.name}]: recipients taken in ${taken.map((m) => `by ${m[1]} ${m[2]}`).join(', ')}`);
  // The loop gives memory back once it has been idle for a second (outbound/trim.ts).
  await new Promise((r) => setTimeout(r, 3000));
  console.log(`delivery[${run.name}]: service 3 s after the run: ${await memoryOf(child)}`);
  for (const l of child.logTail) if (l.includes('memory trimmed')) console.log(`delivery[${run.name}]: ${l}`);
  if (process.env.BENCH_HOLD) await new Promise((r) => setTimeout(r, Number(process.env.BENCH_HOLD) * 1000));
  // BENCH_HEAPSNAPSHOT=1 (with BENCH_NODE_ARGS=--heapsnapshot-signal=SIGUSR2): the main thread's heap after the run.
  if (process.env.BENCH_HEAPSNAPSHOT === '1') {
    child.proc.kill('SIGUSR2');
    await new Promise((r) => setTimeout(r, 8000));
    console.log(`delivery[${run.name}]: after the heap snapshot (a full GC): ${await memoryOf(child)}`);
  }
  if (run.sts) {
    // What the attempts recorded: the policy applied, whether the certificates were verified (read before stop()
    // removes the data folder).
    const check = openDb(dataDir, { databaseUrl });
    const tls = runSync(
      all(
        sql<string>(check, `SELECT data_json FROM events WHERE type = 'delivered' ORDER BY seq DESC LIMIT 1`).pluck(),
      ),
    ).map((j) => JSON.parse(j).tls);
    check.close();
    console.log(`delivery[${run.name}]: last delivered attempt's tls ${JSON.stringify(tls[0])}`);
  }
  agent.destroy();
  await child.stop();
  await sink.stop();
  await dns.stop();
  return out;
}

function postfix(n: number): number | null {
  const script = path.resolve('../shared/bench/postfix-bench.sh');
  if (!fs.existsSync(script) || process.getuid?.() !== 0) {
    console.log('postfix: reference not run (needs ../shared/bench/postfix-bench.sh and root)');
    return null;
  }
  let out: string;
  try {
    out = execFileSync('bash', [script, String(n)], {
      env: { ...process.env, PFB_DKIM: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    }).toString();
  } catch (err) {
    // Every run noisy (other tenants on the box), say: print what it measured and go on.
    out = String((err as { stdout?: Buffer }).stdout ?? '');
    console.log(`postfix: the reference script failed (${(err as Error).message.split('\n')[0]}); its output:\n${out}`);
  }
  const m = /postfix_relay_msgs_per_s=([0-9.]+)/.exec(out);
  return m ? Number(m[1]) : null;
}

/**
 * `npm run bench -- mta-sts`: delivery with a cached MTA-STS enforce policy (verified TLS to every MX) against the same
 * TLS sink with MTA_MTA_STS=off (opportunistic TLS), in pairs (off, on; BENCH_PAIRS times); one domain and 5 domains.
 */
export async function benchMtaSts(opts: { n?: number } = {}): Promise<void> {
  const n = opts.n ?? Number(process.env.BENCH_EMAILS ?? 5000);
  const pairs = Number(process.env.BENCH_PAIRS ?? 3);
  const five = Array.from({ length: 5 }, (_, i) => `d${i}.bench`);
  console.log(
    `delivery, MTA-STS: ${n} emails per run, sink smtp-server with STARTTLS (a CA made here), ${pairs} pairs off/on`,
  );
  for (const domains of [['gmail.bench'], five]) {
    const ratios: number[] = [];
    for (let i = 0; i < pairs; i++) {
      const off = await runOnce({ name: `${domains.length} domain(s), MTA-STS off`, domains, sts: 'off' }, n);
      const on = await runOnce(
        { name: `${domains.length} domain(s), MTA-STS on (cached enforce)`, domains, sts: 'on' },
        n,
      );
      ratios.push(on.rate / off.rate);
      console.log(
        `delivery, MTA-STS: pair ${i + 1}: off ${fmt(off.rate, 0)} msg/s, on ${fmt(on.rate, 0)} msg/s, on/off ${fmt(on.rate / off.rate, 3)}`,
      );
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    console.log(
      `delivery, MTA-STS, ${domains.length} domain(s): on/off per pair ${ratios.map((r) => fmt(r, 3)).join(', ')}; median ${fmt(sorted[Math.floor(sorted.length / 2)], 3)}`,
    );
  }
}

export async function benchDelivery(opts: { n?: number; postfix?: boolean; only?: string } = {}): Promise<void> {
  const n = opts.n ?? Number(process.env.BENCH_EMAILS ?? 10000);
  const five = Array.from({ length: 5 }, (_, i) => `d${i}.bench`);
  const runs: Run[] = [
    { name: 'one domain', domains: ['gmail.bench'] },
    { name: '5 domains on 5 sites', domains: five },
    // The engine alone (mail queued before the start): the other sites' rate with and without one throttled.
    { name: '5 sites, queued before start', domains: five, prequeue: true },
    {
      name: '5 sites, one throttled to 100/s, queued before start',
      domains: five,
      prequeue: true,
      throttledDomain: five[0],
      shaping: { sites: { slow: { mx: [`mx.${five[0]}`], rate: '100/s' } } },
    },
  ];
  console.log(
    `delivery: ${n} emails per run through POST /v1/emails (${process.env.BENCH_CLIENTS ?? 16} ${process.env.BENCH_CLIENT === 'http' ? 'node:http' : 'autocannon'} clients) after ${process.env.BENCH_WARMUP ?? 200} un-timed warm-up emails (as postfix-bench.sh), RSA-2048 DKIM, Postfix smtp-sink as the receiver when installed (else smtp-server in the bench process)`,
  );
  const results: Record<string, number>[] = [];
  for (const r of runs) if (!opts.only || r.name.startsWith(opts.only)) results.push(await runOnce(r, n));
  if (results.length === 4) {
    const others = five.slice(1).map((d) => [results[2][`rate_${d}`], results[3][`rate_${d}`]]);
    const drop = others.map(([a, b]) => 1 - b / a);
    console.log(
      `delivery: the other sites' rate with one site throttled: ${drop.map((x) => `${fmt(-x * 100, 1)}%`).join(', ')} (vs the same run unthrottled; noise included)`,
    );
  }
  if (opts.postfix) {
    const pf = postfix(n);
    if (pf !== null)
      console.log(`postfix + opendkim: ${fmt(pf, 0)} msg/s; this service / postfix: ${fmt(results[0].rate / pf, 2)}×`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchDelivery({ postfix: process.argv.includes('--postfix') });
  process.exit(0);
}
