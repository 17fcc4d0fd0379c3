// Mocha root hooks (wired in .mocharc.json) for a run on PostgreSQL: with MTA_TEST_ENGINE=pg, one throwaway cluster
// (test/helpers/pg.ts) per test process is started before the tests and its URL put in MTA_TEST_PG_URL, for helpers
// that make a database per test with createDatabase(). Without MTA_TEST_ENGINE=pg it does nothing.
// Serial run: the hooks run once; the cluster is stopped after all tests. Parallel run (`mocha --parallel`, see
// scripts/test-all.mjs): each worker process runs them around every file it is given, so the worker keeps its cluster
// from file to file (sharedPg() starts it once) and pg.ts stops it when the worker exits. There, with MTA_TEST_TIMES
// set to a file name, each file's wall time (its hooks included) is appended to that file: `ms<TAB>file`.
import fs from 'node:fs';
import path from 'node:path';
import { sharedPg, stopSharedPg } from './pg.js';

const wanted = () => process.env.MTA_TEST_ENGINE === 'pg';
const inWorker = () => process.env.MOCHA_WORKER_ID !== undefined;
let fileStart = 0;

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    fileStart = Date.now();
    if (!wanted()) return;
    this.timeout(120_000);
    const pg = await sharedPg();
    process.env.MTA_TEST_PG_URL = pg.url;
  },
  async afterAll(this: Mocha.Context) {
    const times = process.env.MTA_TEST_TIMES;
    const file = this.test?.parent?.suites[0]?.file;
    if (times && inWorker() && file)
      fs.appendFileSync(times, `${Date.now() - fileStart}\t${path.relative('.', file)}\n`);
    if (!wanted() || inWorker()) return;
    this.timeout(60_000);
    await stopSharedPg();
  },
};
