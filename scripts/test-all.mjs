// `npm test`: every test, on SQLite (unit + integration + browser) and on PostgreSQL (integration), in groups that run
// at the same time. Most of the suite waits (sockets, timers, child processes, fsync) rather than computes, so:
//   phase 1: the SQLite and the PostgreSQL "parallel" groups at once, each a `mocha --parallel` with JOBS workers
//            (each worker is its own process with its own throwaway PostgreSQL cluster, test/helpers/pg-root.ts);
//   phase 2: the "serial" groups (files listed in SERIAL: browser tests and those that assert latency or ordering
//            under load), one plain mocha process per engine, the two engines at once.
//   phase 3: only if some test failed: the files of the failing tests again, alone (one plain mocha per engine, one
//            engine after the other), to tell a test that fails under the phases' load from one that fails alone.
// Each group's output goes to its own log (MTA_TEST_LOGS, default a temp folder) and is printed whole when the group
// ends; then a summary (passing/failing/pending and wall time per group), and the first failures of each failed group
// with their errors, so that the end of the output says what failed. Every group always runs to its end.
// The exit code is 0 when every group passed, or when every failing test's file passed when run again alone: those
// are named FLAKY in the summary (a test to mend: docs/testing.md). It is 1 when a file failed again alone, a group
// failed without naming a test (a crash, a file that does not load), or a group passed nothing.
// `node scripts/test-all.mjs sqlite` (or `pg`) runs one engine only. MTA_TEST_RERUN=0 turns phase 3 off.
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
  'test/integration/pg-plan-driver.test.ts', // a pipelined transaction to a distant server takes 350-900 ms
  'test/integration/security-body.test.ts', // /healthz answers within 300 ms while deep JSON bodies parse
  'test/integration/inbound-session.test.ts', // a NOOP-every-50-ms session is cut within 300-3000 ms
  'test/integration/webhooks.test.ts', // an event is POSTed to its endpoint within 500 ms
  'test/integration/tracking-rewrite.test.ts', // /healthz within 500 ms while a large HTML body is rewritten
  'test/integration/pg-multinode.test.ts', // kills a node mid-delivery on a timer; two nodes, 2,000 emails
  'test/integration/store-outage.test.ts', // stops PostgreSQL under load for a while; two nodes
  'test/integration/pg-lease-budget.test.ts', // a send ends before its lease: a margin of ~1 s on timers
];

// Started first in their group (slowest first keeps the workers evenly busy at the end); an order only. By the
// slower engine's wall time in the dry runs of session 20 (GROUP.times), slowest first.
const SLOW_FIRST = [
  'test/integration/queue-counts.test.ts', // 62 s on PostgreSQL
  'test/integration/alerts.test.ts',
  'test/integration/receiving.test.ts',
  'test/integration/delivery-cli.test.ts',
  'test/integration/outbound-crash.test.ts',
  'test/integration/settings-refused.test.ts',
  'test/integration/outbound-mta-sts.test.ts',
  'test/integration/api-crash.test.ts',
  'test/integration/list-plans.test.ts',
  'test/integration/outbound-hostile.test.ts',
  'test/integration/outbound-dane.test.ts',
  'test/integration/ip-health.test.ts',
  'test/integration/migrate-to-postgres.test.ts',
  'test/integration/outbound-replies.test.ts',
  'test/integration/openapi-client.test.ts',
  'test/integration/backup.test.ts',
  'test/unit/architecture.test.ts',
  'test/integration/security-submission.test.ts',
  'test/integration/cli-store.test.ts',
  'test/integration/outbound-claims.test.ts', // 14–16 s
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
  // from the reporter in a serial one. The files of failing tests to NAME.failed (the reporter, both kinds).
  const times = path.join(logDir, `${g.name}.times`);
  const failedList = path.join(logDir, `${g.name}.failed`);
  fs.rmSync(failedList, { force: true });
  const args = [MOCHA, '--reporter', path.join(ROOT, 'test/helpers/file-times.cjs')];
  if (g.parallel) args.push('--parallel', '--jobs', String(JOBS), ...bySlowFirst(g.files));
  else args.push(...g.files);
  const out = fs.openSync(log, 'w');
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: {
        ...process.env,
        ...g.env,
        MTA_TEST_TIMES: times,
        FILE_TIMES_OUT: g.parallel ? `${times}.reporter` : times,
        MTA_TEST_FAILED: failedList,
      },
      stdio: ['ignore', out, out],
    });
    const done = (code, signal) => {
      fs.closeSync(out);
      const text = fs.readFileSync(log, 'utf8');
      const count = (word) => Number(text.match(new RegExp(`^\\s*(\\d+) ${word}\\b`, 'm'))?.[1] ?? 0);
      const failedFiles = fs.existsSync(failedList)
        ? [...new Set(fs.readFileSync(failedList, 'utf8').split('\n').filter(Boolean))].map((f) =>
            path.relative(ROOT, f),
          )
        : [];
      const r = {
        name: g.name,
        group: g,
        code: code ?? (signal ? `signal ${signal}` : 1),
        passing: count('passing'),
        failing: count('failing'),
        pending: count('pending'),
        failedFiles,
        failures: failureSection(text),
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

/** Mocha's list of failures (from "N failing" on), at most 150 lines, for the summary. */
function failureSection(text) {
  const at = text.search(/^\s*\d+ failing\b/m);
  if (at < 0) return '';
  const lines = text.slice(at).split('\n');
  return (
    lines.slice(0, 150).join('\n') + (lines.length > 150 ? `\n… (${lines.length - 150} more lines in the log)` : '')
  );
}

const failedOf = (r) => r.code !== 0 || r.failing > 0 || r.passing === 0;
/** A failed group whose failing tests all name their file (no crash, nothing failed outside a test). */
const rerunnable = (r) =>
  r.failing > 0 &&
  r.passing > 0 &&
  r.code === r.failing &&
  r.failedFiles.length > 0 &&
  !r.failedFiles.includes('(unknown file)');

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

// Phase 3: the failing tests' files again, alone.
const reruns = new Map();
if (process.env.MTA_TEST_RERUN !== '0') {
  for (const r of results.filter((x) => failedOf(x) && rerunnable(x))) {
    console.log(
      `\nphase 3: ${r.name}: running again alone: ${r.failedFiles.join(' ')} (load ${os.loadavg()[0].toFixed(1)})`,
    );
    const g = { ...r.group, name: `${r.name}-rerun`, files: r.failedFiles, parallel: false };
    reruns.set(r.name, await runGroup(g));
  }
}

const line = (r) =>
  `${r.name.padEnd(22)} ${String(r.passing).padStart(5)} passing ${String(r.failing).padStart(3)} failing ` +
  `${String(r.pending).padStart(3)} pending  ${r.seconds.toFixed(0).padStart(4)} s  exit ${r.code}  ${r.log}`;
const flaky = [];
const failed = [];
for (const r of results.filter(failedOf)) {
  const again = reruns.get(r.name);
  if (again && !failedOf(again)) flaky.push(r);
  else failed.push(r);
}
console.log('\n===== summary =====');
for (const r of results) {
  console.log(line(r));
  if (reruns.has(r.name)) console.log(line(reruns.get(r.name)));
}
for (const r of [...failed, ...flaky]) {
  const again = reruns.get(r.name);
  const verdict = !again
    ? 'FAILED (not run again)'
    : failedOf(again)
      ? 'FAILED, and again alone'
      : `FLAKY: failed in phase ${r.group.phase}, passed alone (${r.failedFiles.join(', ')})`;
  console.log(`\n----- ${r.name}: ${verdict} -----`);
  if (r.failedFiles.length) console.log(`files: ${r.failedFiles.join(', ')}`);
  console.log(r.failures || `(no "failing" list in the log; its last lines:)\n${tail(r.log, 40)}`);
  if (again && failedOf(again)) console.log(`--- the run alone ---\n${again.failures || tail(again.log, 40)}`);
}
console.log(
  `\ntotal ${((Date.now() - t0) / 1000).toFixed(0)} s, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}: ${
    failed.length ? `FAILED: ${failed.map((r) => r.name).join(', ')}` : 'all groups passed'
  }${flaky.length ? `; FLAKY (passed alone): ${flaky.map((r) => r.name).join(', ')}` : ''}`,
);
process.exit(failed.length ? 1 : 0);

function tail(file, n) {
  return fs.readFileSync(file, 'utf8').split('\n').slice(-n).join('\n');
}
