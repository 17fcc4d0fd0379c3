// Mocha root hooks for a run on PostgreSQL (not wired into .mocharc yet): with MTA_TEST_ENGINE=pg, one throwaway
// cluster (test/helpers/pg.ts) is started before all tests and its URL put in MTA_TEST_PG_URL, for helpers that make a
// database per test with createDatabase(); it is stopped after all tests (and on exit, whatever happens).
// Use: mocha --require test/helpers/pg-root.ts …  (or "require" in .mocharc). Without MTA_TEST_ENGINE=pg it does nothing.
import { sharedPg, stopSharedPg } from './pg.js';

const wanted = () => process.env.MTA_TEST_ENGINE === 'pg';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    if (!wanted()) return;
    this.timeout(120_000);
    const pg = await sharedPg();
    process.env.MTA_TEST_PG_URL = pg.url;
  },
  async afterAll(this: Mocha.Context) {
    if (!wanted()) return;
    this.timeout(60_000);
    await stopSharedPg();
  },
};
