// Mocha root hooks (wired in .mocharc.json) for a run on PostgreSQL: with MTA_TEST_ENGINE=pg, one throwaway cluster
// (test/helpers/pg.ts) per test process is started before the tests and its URL put in MTA_TEST_PG_URL, for helpers
// that make a database per test with createDatabase(). Without MTA_TEST_ENGINE=pg it does nothing.
// Serial run: the hooks run once; the cluster is stopped after all tests. Parallel run (`mocha --parallel`, see
// scripts/test-all.mjs): each worker process runs them around every file it is given, so the worker keeps its cluster
// from file to file (sharedPg() starts it once) and pg.ts stops it when the worker exits. There, with MTA_TEST_TIMES
// set to a file name, each file's wall time (its hooks included) is appended to that file, with the CPU time of the
// worker process and of the child processes it ran that ended meanwhile: `ms<TAB>cpu-ms<TAB>children-cpu-ms<TAB>file`.
import fs from 'node:fs';
import path from 'node:path';
import { sharedPg, stopSharedPg } from './pg.js';

const wanted = () => process.env.MTA_TEST_ENGINE === 'pg';
const inWorker = () => process.env.MOCHA_WORKER_ID !== undefined;
let fileStart = 0;
let cpuStart = { self: 0, children: 0 };

/**
 * CPU ms of this process (every thread) and of its children that have ended (those it waited for: `mta` commands,
 * `mta serve` children; not the PostgreSQL servers, which pg_ctl detaches), from /proc/self/stat (Linux; 0 elsewhere).
 */
function cpuNow(): { self: number; children: number } {
  try {
    const f = fs.readFileSync('/proc/self/stat', 'utf8');
    const v = f
      .slice(f.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number); // fields from the 3rd (state) on
    const tick = 10; // ms per clock tick (USER_HZ = 100 on Linux)
    return { self: (v[11]! + v[12]!) * tick, children: (v[13]! + v[14]!) * tick };
  } catch {
    return { self: 0, children: 0 };
  }
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    fileStart = Date.now();
    cpuStart = cpuNow();
    if (!wanted()) return;
    this.timeout(120_000);
    const pg = await sharedPg();
    process.env.MTA_TEST_PG_URL = pg.url;
  },
  async afterAll(this: Mocha.Context) {
    const times = process.env.MTA_TEST_TIMES;
    const file = this.test?.parent?.suites[0]?.file;
    if (times && inWorker() && file) {
      const cpu = cpuNow();
      const row = [Date.now() - fileStart, cpu.self - cpuStart.self, cpu.children - cpuStart.children];
      fs.appendFileSync(times, `${row.join('\t')}\t${path.relative('.', file)}\n`);
    }
    if (!wanted() || inWorker()) return;
    this.timeout(60_000);
    await stopSharedPg();
  },
};
