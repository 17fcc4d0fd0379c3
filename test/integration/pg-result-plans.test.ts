// The delivery loop's set-wise result writes on PostgreSQL (src/store/result-writes.ts) reach their rows by key, not by
// reading the whole table: the plan PostgreSQL makes for a batch of three, with a few thousand emails and recipients
// stored and the statistics fresh, has no sequential scan of deliveries or emails. Before `LIMIT ?` told the planner
// the batch's length, jsonb_to_recordset was estimated at 100 rows and every batch hashed a scan of the whole table
// (seen with pg_stat_statements: ~190 buffers read per 9-recipient batch at 5,200 rows). PostgreSQL only.
import { expect } from 'chai';
import { openPg, PLAN_EACH_TIME, sql, type DB } from '../../src/store/db.js';
import { all, runSync } from '../../src/store/op.js';
import { CHECKED, DELIVERIES, EMAILS, EMAILS_CHECKED } from '../../src/store/result-writes.js';
import { createDatabase, sharedPg } from '../helpers/pg.js';
import { testEngine } from '../helpers/service.js';

const ROWS = 4000;

/** The plan PostgreSQL makes for `text` with these values (EXPLAIN, nothing run), one line per node. */
function explain(db: DB, text: string, ...args: unknown[]): string {
  const body = text.slice(PLAN_EACH_TIME.length);
  const rows = runSync(all(sql<Record<string, string>>(db, `${PLAN_EACH_TIME} EXPLAIN ${body}`), ...args));
  return rows.map((r) => Object.values(r)[0]).join('\n');
}

describe('PostgreSQL: result batches find their rows by key', function () {
  this.timeout(60_000);
  let db: DB;

  before(async function () {
    if (testEngine() !== 'pg') return this.skip(); // PostgreSQL only: MTA_TEST_ENGINE=pg
    db = openPg(await createDatabase((await sharedPg()).url));
    db.exec(`INSERT INTO teams (id, name, created_at) VALUES ('t', 't', 0)`);
    db.exec(`INSERT INTO emails (seq, id, team_id, test_mode, status, from_addr, to_json, subject, credits_charged,
        sender_domain, created_at, updated_at)
      SELECT g, 'em_' || g, 't', 0, 'delivered', 'a@x.test', '[]', 's', 1, 'x.test', g, g
      FROM generate_series(1, ${ROWS}) AS g`);
    db.exec(`INSERT INTO deliveries (email_seq, recipient, kind, domain, status, attempts, updated_at)
      SELECT g, 'r' || g || '@y.test', 'to', 'y.test', 'delivered', 1, g FROM generate_series(1, ${ROWS}) AS g`);
    db.exec('ANALYZE emails; ANALYZE deliveries');
  });
  after(() => db?.close());

  const batch = [101, 2002, 3003];
  const recipients = JSON.stringify(
    batch.map((id) => ({ id, from_status: 'sent', status: 'delivered', attempts: 1, settle: true })),
  );
  const emails = JSON.stringify(batch.map((seq) => ({ seq, from_status: 'sent', status: 'delivered' })));

  for (const [name, text, args] of [
    ['recipients', DELIVERIES, [1, 1, recipients, 3]],
    ['recipients, checked', CHECKED, [1, 1, recipients, 3, 3, 3]],
    ['emails', EMAILS, [1, emails, 3]],
    ['emails, checked', EMAILS_CHECKED, [1, emails, 3, 3, 3]],
  ] as const) {
    it(`${name}: an index scan per row, no scan of the table`, () => {
      const plan = explain(db, text, ...args);
      expect(plan).to.not.match(/Seq Scan on (deliveries|emails)/);
      expect(plan).to.match(/Index Scan using (deliveries|emails)_pkey/);
    });
  }
});
