// Mocha root hooks (wired in .mocharc.json) for a run on PostgreSQL: with MTA_TEST_ENGINE=pg, one throwaway cluster
// (test/helpers/pg.ts) per test process is started before the tests and its URL put in MTA_TEST_PG_URL, for helpers
// that make a database per test with createDatabase(). Without MTA_TEST_ENGINE=pg it does nothing.
// Serial run: the hooks run once; the cluster is stopped after all tests. Parallel run (`mocha --parallel`, see
// scripts/test-all.mjs): each worker process runs them around every file it is given, so the worker keeps its cluster
// from file to file (sharedPg() starts it once) and pg.ts stops it when the worker exits.
import { sharedPg, stopSharedPg } from './pg.js';

const wanted = () => process.env.MTA_TEST_ENGINE === 'pg';
const inWorker = () => process.env.MOCHA_WORKER_ID !== undefined;

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    if (!wanted()) return;
    this.timeout(120_000);
    const pg = await sharedPg();
    process.env.MTA_TEST_PG_URL = pg.url;
  },
  async afterAll(this: Mocha.Context) {
    if (!wanted() || inWorker()) return;
    this.timeout(60_000);
    await stopSharedPg();
  },
};
