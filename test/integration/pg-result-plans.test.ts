// The delivery loop's set-wise result writes on PostgreSQL (src/store/result-writes.ts) reach their rows by key, not by
// reading the whole table: the plan PostgreSQL makes for a batch of three, with a few thousand emails and recipients
// stored and the statistics fresh, has no sequential scan of deliveries or emails. Before `LIMIT ?` told the planner
// the batch's length, jsonb_to_recordset was estimated at 100 rows and every batch hashed a scan of the whole table
// (seen with pg_stat_statements: ~190 buffers read per 9-recipient batch at 5,200 rows). PostgreSQL only.
import { expect } from 'chai';
import { openPg, PLAN_EACH_TIME, sql, type DB } from '../../src/store/db.js';
import { all, get, runSync } from '../../src/store/op.js';
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

/** A fresh migrated database holding one team, 't'. */
async function withTeam(): Promise<DB> {
  const db = openPg(await createDatabase((await sharedPg()).url));
  db.exec(`INSERT INTO teams (id, name, created_at) VALUES ('t', 't', 0)`);
  return db;
}

describe('PostgreSQL: result batches find their rows by key', function () {
  this.timeout(60_000);
  let db: DB;

  before(async function () {
    if (testEngine() !== 'pg') return this.skip(); // PostgreSQL only: MTA_TEST_ENGINE=pg
    db = await withTeam();
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

// The trigger that keeps email_tags.status equal to emails.status (migrations-pg/032, 036). Before the table has
// statistics (a new install, a burst before autovacuum's next ANALYZE) PostgreSQL bounded its UPDATE by team and mode
// only and filtered the tag and email inside the index: every status change of a tagged email read its team's whole
// range of email_tags (auto_explain in `bench -- api`: 132 buffers and ~1.2 ms per change over 11,080 changes, 14 s of
// the server's ~20; it grows with the table). 036 binds every column of the index by equality: one probe per tag.
// Measured with 20,000 emails: 183 index pages for ten changes, 3,729 with 032's trigger (the test has 10,000).
describe("PostgreSQL: a tagged email's status change finds its tag rows by key", function () {
  this.timeout(60_000);
  let db: DB;

  before(async function () {
    if (testEngine() !== 'pg') return this.skip(); // PostgreSQL only: MTA_TEST_ENGINE=pg
    db = await withTeam();
  });
  after(() => db?.close());

  /** Tagged emails seq from..to, as accepted (status 'queued'), with their email_tags rows. */
  const tagged = (from: number, to: number) => {
    db.exec(`INSERT INTO emails (seq, id, team_id, test_mode, status, from_addr, to_json, subject, credits_charged,
        sender_domain, tags_json, created_at, updated_at)
      SELECT g, 'em_' || g, 't', 0, 'queued', 'a@x.test', '[]', 's', 1, 'x.test', '["signin","eu"]', g, g
      FROM generate_series(${from}, ${to}) AS g`);
    db.exec(`INSERT INTO email_tags (team_id, tag, test_mode, status, email_seq)
      SELECT 't', tag, 0, 'queued', g FROM generate_series(${from}, ${to}) AS g, (VALUES ('signin'), ('eu')) AS v(tag)`);
  };
  const change = (from: number, to: number, status: string) => {
    for (let seq = from; seq <= to; seq++) db.exec(`UPDATE emails SET status = '${status}' WHERE seq = ${seq}`);
  };
  /** Index pages of email_tags read so far, all indexes (this session's counts reported first). */
  const scans = () => {
    db.exec('SELECT pg_stat_force_next_flush()'); // reported at the end of this statement's transaction
    const rows = runSync(
      all(
        sql<{ hit: string; read: string }>(
          db,
          `SELECT idx_blks_hit AS hit, idx_blks_read AS read FROM pg_statio_user_indexes WHERE relname = 'email_tags'`,
        ),
      ),
    );
    return rows.reduce((n, r) => n + Number(r.hit) + Number(r.read), 0);
  };

  it("each change probes an index, not its team's range, once the table has grown", () => {
    // the session's first changes, on a table of two emails: PL/pgSQL settles on a plan here (generic at once, as
    // it would be after a few calls)
    db.exec('SET plan_cache_mode = force_generic_plan');
    tagged(1, 2);
    for (const status of ['sent', 'delivered', 'bounced', 'sent', 'delivered']) change(1, 2, status);
    // the table grows (no ANALYZE: autovacuum has not come by yet)
    tagged(11, 10_000);
    const before = scans();
    change(2001, 2010, 'delivered');
    const after = scans();
    const changed = runSync(
      get(
        sql<{ n: string }>(db, `SELECT count(*) AS n FROM email_tags WHERE status = 'delivered' AND email_seq > 2000`),
      ),
    );
    expect(Number(changed?.n)).to.equal(20); // both tags of each of the ten emails
    // a probe and the new version's entries in both indexes: ~10 pages per tag; the team's range ~180 pages per change here
    expect(after - before).to.be.at.most(400);
    db.exec('RESET plan_cache_mode');
  });
});
