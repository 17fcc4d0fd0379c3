// `npm test`: every test, on SQLite (unit + integration + browser) and on PostgreSQL (integration), in groups that run
// at the same time. Most of the suite waits (sockets, timers, child processes, fsync) rather than computes, so:
//   phase 1: the SQLite and the PostgreSQL "parallel" groups at once, each a `mocha --parallel` with JOBS workers
//            (each worker is its own process with its own throwaway PostgreSQL cluster, test/helpers/pg-root.ts);
//   phase 2: the "serial" groups (files listed in SERIAL: browser tests and those that assert latency or ordering
//            under load), one plain mocha process per engine, the two engines at once.
// Each group's output goes to its own log (MTA_TEST_LOGS, default a temp folder) and is printed whole when the group
// ends; then a summary (passing/failing/pending and wall time per group). Every group always runs to its end; the exit
// code is non-zero when any group failed. `node scripts/test-all.mjs sqlite` (or `pg`) runs one engine only.
// Environment: MTA_TEST_JOBS (workers per parallel group, default 2), MTA_TEST_LOGS (log folder), MTA_TEST_ONLY.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MOCHA = path.join(ROOT, 'node_modules/mocha/bin/mocha.js');
const JOBS = Number(process.env.MTA_TEST_JOBS || 2);

// Run alone (per engine), after the parallel groups: browser tests, and files whose tests assert a latency, an order
// of events under load, or kill processes on a timer. A file moves here only for such a reason (say which in the list).
export const SERIAL = [
  'test/browser/', // Chromium: heavy, and waits on rendering
  'test/integration/queue-purge.test.ts', // the API's p99 during a 10,000-recipient purge vs before it
  'test/integration/pg-http-workers.test.ts', // each of ten emails reaches the MX within 600 ms
  'test/integration/pg-plan-driver.test.ts', // a pipelined transaction to a distant server takes 350-900 ms
  'test/integration/security-body.test.ts', // /healthz answers within 300 ms while deep JSON bodies parse
  'test/integration/inbound-session.test.ts', // a NOOP-every-50-ms session is cut within 300-3000 ms
  'test/integration/webhooks.test.ts', // an event is POSTed to its endpoint within 500 ms
  'test/integration/inbound-redos.test.ts', // /healthz answers within 200 ms while a 5,000-line DSN is read
  'test/integration/tracking-rewrite.test.ts', // /healthz within 500 ms while a large HTML body is rewritten
  'test/integration/pg-multinode.test.ts', // kills a node mid-delivery on a timer; two nodes, 2,000 emails
  'test/integration/store-outage.test.ts', // stops PostgreSQL under load for a while; two nodes
];

// Started first in their group (slowest first keeps the workers evenly busy at the end); an order only.
const SLOW_FIRST = [
  'test/integration/queue-counts.test.ts',
  'test/integration/alerts.test.ts',
  'test/integration/delivery-cli.test.ts',
  'test/integration/cli-config.test.ts',
  'test/integration/ip-health.test.ts',
  'test/integration/cli-store.test.ts',
  'test/integration/outbound-mta-sts.test.ts',
  'test/integration/outbound-dane.test.ts',
];

function testFiles(dir) {
  const out = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...testFiles(rel));
    else if (e.name.endsWith('.test.ts')) out.push(rel);
  }
  return out.sort();
}

const isSerial = (f) => SERIAL.some((s) => (s.endsWith('/') ? f.startsWith(s) : f === s));
const rank = (f) => {
  const i = SLOW_FIRST.indexOf(f);
  return i < 0 ? SLOW_FIRST.length : i;
};
const bySlowFirst = (files) => [...files].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));

// MTA_TEST_ONLY=a,b: only the files whose path contains one of these (to try the runner itself on a few files).
const only = (process.env.MTA_TEST_ONLY ?? '').split(',').filter(Boolean);
const picked = (f) => only.length === 0 || only.some((o) => f.includes(o));
const sqliteFiles = testFiles('test').filter(picked);
const pgFiles = testFiles('test/integration').filter(picked);

const groups = {
  sqlite: [
    { name: 'sqlite-parallel', phase: 1, env: {}, files: sqliteFiles.filter((f) => !isSerial(f)), parallel: true },
    { name: 'sqlite-serial', phase: 2, env: {}, files: sqliteFiles.filter(isSerial), parallel: false },
  ],
  pg: [
    {
      name: 'pg-parallel',
      phase: 1,
      env: { MTA_TEST_ENGINE: 'pg' },
      files: pgFiles.filter((f) => !isSerial(f)),
      parallel: true,
    },
    { name: 'pg-serial', phase: 2, env: { MTA_TEST_ENGINE: 'pg' }, files: pgFiles.filter(isSerial), parallel: false },
  ],
};

const wanted = process.argv.slice(2);
const chosen = Object.entries(groups)
  .filter(([engine]) => wanted.length === 0 || wanted.includes(engine))
  .flatMap(([, g]) => g)
  .filter((g) => g.files.length > 0);
if (chosen.length === 0) {
  console.error(`no tests to run for ${wanted.join(' ')} (engines: ${Object.keys(groups).join(', ')})`);
  process.exit(2);
}

const logDir = process.env.MTA_TEST_LOGS || fs.mkdtempSync(path.join(os.tmpdir(), 'mta-test-logs-'));
fs.mkdirSync(logDir, { recursive: true });

/** Runs one group to its end; resolves with its result (never rejects). */
function runGroup(g) {
  const log = path.join(logDir, `${g.name}.log`);
  // Each file's wall time, hooks included, to NAME.times: from the root hooks in a parallel group (test/helpers/pg-root.ts),
  // from the reporter in a serial one.
  const times = path.join(logDir, `${g.name}.times`);
  const args = [MOCHA];
  if (g.parallel) args.push('--parallel', '--jobs', String(JOBS), ...bySlowFirst(g.files));
  else args.push('--reporter', path.join(ROOT, 'test/helpers/file-times.cjs'), ...g.files);
  const out = fs.openSync(log, 'w');
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, ...g.env, MTA_TEST_TIMES: times, FILE_TIMES_OUT: times },
      stdio: ['ignore', out, out],
    });
    const done = (code, signal) => {
      fs.closeSync(out);
      const text = fs.readFileSync(log, 'utf8');
      const count = (word) => Number(text.match(new RegExp(`^\\s*(\\d+) ${word}\\b`, 'm'))?.[1] ?? 0);
      const r = {
        name: g.name,
        code: code ?? (signal ? `signal ${signal}` : 1),
        passing: count('passing'),
        failing: count('failing'),
        pending: count('pending'),
        seconds: (Date.now() - t0) / 1000,
        log,
      };
      console.log(`\n===== ${g.name} (${g.files.length} files): exit ${r.code}, ${r.seconds.toFixed(0)} s =====`);
      process.stdout.write(text);
      resolve(r);
    };
    child.on('error', (err) => {
      fs.appendFileSync(log, `\ncould not start mocha: ${err.message}\n`);
      done(1);
    });
    child.on('exit', done);
  });
}

const t0 = Date.now();
const results = [];
for (const phase of [...new Set(chosen.map((g) => g.phase))].sort()) {
  console.log(
    `phase ${phase}: ${chosen
      .filter((g) => g.phase === phase)
      .map((g) => g.name)
      .join(', ')} (load ${os.loadavg()[0].toFixed(1)})`,
  );
  results.push(...(await Promise.all(chosen.filter((g) => g.phase === phase).map(runGroup))));
}

const failed = results.filter((r) => r.code !== 0 || r.failing > 0 || r.passing === 0);
console.log('\n===== summary =====');
for (const r of results)
  console.log(
    `${r.name.padEnd(16)} ${String(r.passing).padStart(5)} passing ${String(r.failing).padStart(3)} failing ` +
      `${String(r.pending).padStart(3)} pending  ${r.seconds.toFixed(0).padStart(4)} s  exit ${r.code}  ${r.log}`,
  );
console.log(
  `total ${((Date.now() - t0) / 1000).toFixed(0)} s, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}: ${failed.length ? `FAILED: ${failed.map((r) => r.name).join(', ')}` : 'all groups passed'}`,
);
process.exit(failed.length ? 1 : 0);
