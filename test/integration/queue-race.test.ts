// A queue action's batch is written set-wise, its compare-and-set checked at the end (services/queue.ts): when another
// connection changes a recipient between the batch's read and its write (PostgreSQL, READ COMMITTED: a result of the
// delivery loop, another node's action), the batch is undone and run again one recipient at a time. The changed
// recipient keeps what the other connection wrote; the others are purged, refunded and evented once each.
import { expect } from 'chai';
import { startTestService, openTestDb, tempDir, testEngine, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { parseFilter, queueAction } from '../../src/services/queue.js';
import { feature as operations } from '../../src/features/operations.js';
import type { DB } from '../../src/store/db.js';

describe('queue actions: a recipient changed under a batch by another connection', function () {
  this.timeout(60_000);
  let s: TestService;
  let other: DB;
  before(async function () {
    // SQLite's writers are one at a time: a batch reads and writes in one IMMEDIATE transaction, nothing in between.
    if (testEngine() !== 'pg') this.skip();
    const dir = tempDir();
    s = await startTestService({ dataDir: dir, features: [operations] });
    other = await openTestDb(dir); // another connection (the CLI's, another node's)
  });
  after(async () => {
    other?.close();
    await s?.close();
  });

  it('purges the others and leaves the changed one as the other connection wrote it', async () => {
    const team = s.team();
    s.credits(team.id, 10);
    const key = s.key(team.id, 'live', ['emails:send', 'emails:read']);
    insertVerifiedDomain(s.db, team.id, 'sender.test');
    const balance = async () => (await s.api('GET', '/v1/credits', { key })).body.available as number;
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: {
        from: 'app@sender.test',
        to: ['a@race.test', 'b@race.test', 'c@race.test'],
        subject: 's',
        text: 't',
        scheduled_at: new Date(Date.now() + 3600e3).toISOString(),
      },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    const charged = await balance();
    const seq = s.db.prepare('SELECT seq FROM emails WHERE id = ?').pluck().get(r.body.id) as number;
    const ids = s.db.prepare('SELECT id FROM deliveries WHERE email_seq = ? ORDER BY id').pluck().all(seq) as number[];
    // The other connection delivers the first recipient and holds its transaction open: the purge's batch reads it
    // queued (not committed yet), then waits for its row lock.
    other.exec('BEGIN');
    const byOther = other.prepare("UPDATE deliveries SET status = 'delivered', reason = 'by-other' WHERE id = ?");
    expect(byOther.run(ids[0]).changes, 'sent now (a deferred write would wait for the COMMIT)').to.equal(1);
    const purge = queueAction(s.ctx, 'purge', await parseFilter(s.ctx, { email: r.body.id }));
    const waiting = () =>
      s.db.prepare("SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'").pluck().get();
    for (const end = Date.now() + 20_000; Number(waiting()) === 0 && Date.now() < end;)
      await new Promise((res) => setTimeout(res, 20));
    expect(Number(waiting()), 'the purge waits for the row the other connection holds').to.equal(1);
    other.exec('COMMIT');
    expect(await purge).to.deep.equal({ matched: 2 });

    const rows = s.db.prepare('SELECT status, reason FROM deliveries WHERE email_seq = ? ORDER BY id').all(seq);
    expect(rows).to.deep.equal([
      { status: 'delivered', reason: 'by-other' },
      { status: 'failed', reason: 'purged' },
      { status: 'failed', reason: 'purged' },
    ]);
    const failed = s.db
      .prepare("SELECT recipient FROM events WHERE email_seq = ? AND type = 'failed' AND recipient IS NOT NULL")
      .pluck()
      .all(seq);
    expect(failed.sort(), 'one failed event per purged recipient').to.deep.equal(['b@race.test', 'c@race.test']);
    expect(await balance(), 'the two purged recipients refunded').to.equal(charged + 2);
  });
});
