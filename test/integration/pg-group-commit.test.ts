// Round trips the PostgreSQL engine saves, and what must not change while it saves them: a group-commit turn sends
// its requests' writes with the next round trip (a request's RELEASE is deferred), yet a failing write still fails
// only its own request (the turn runs again, each scope flushed at its end); reads remembered per transaction
// (txMemo) and reads sent together (getLater).
import { expect } from 'chai';
import { PgDatabase } from '../../src/store/pg/database.js';
import { forgetMemo, getLater, openPg, PLAN_EACH_TIME, tx, txMemo, type DB } from '../../src/store/db.js';
import { groupTx } from '../../src/store/group-commit.js';
import { emailBySeq, readEmailsAhead } from '../../src/store/emails.js';
import { claimDue, confirmClaims, lightTx, releaseClaims } from '../../src/store/queue.js';
import { runSync } from '../../src/store/op.js';
import { createDatabase, pgBinDir, sharedPg } from '../helpers/pg.js';

describe('PostgreSQL: group commit with deferred writes, remembered and batched reads', function () {
  this.timeout(60_000);
  let pg: PgDatabase;
  let db: DB;
  before(async function () {
    if (!pgBinDir() && !process.env.MTA_TEST_PG_URL) this.skip();
    pg = new PgDatabase(await createDatabase((await sharedPg()).url));
    pg.exec('CREATE TABLE g (id BIGINT PRIMARY KEY, v TEXT)');
    pg.loadCatalog();
    db = pg as unknown as DB;
  });
  after(() => pg?.close());
  beforeEach(() => pg.exec('DELETE FROM g'));

  const insert = (id: number, v = 'x') => db.prepare('INSERT INTO g (id, v) VALUES (?, ?)').run(id, v);
  const ids = () => (db.prepare('SELECT id FROM g ORDER BY id').pluck().all() as number[]).map(Number);

  it('sends the writes of a turn of write-only requests in one round trip with its COMMIT', async () => {
    insert(0); // prepared outside the measure
    pg.exec('DELETE FROM g');
    const before = pg.client.roundTrips;
    const done = [1, 2, 3, 4].map((id) => groupTx(db, () => insert(id)));
    await Promise.all(done);
    expect(pg.client.roundTrips - before).to.equal(1);
    expect(ids()).to.deep.equal([1, 2, 3, 4]);
  });

  it('a request whose deferred write fails is refused alone; the others of its turn are committed', async () => {
    insert(2);
    const results = await Promise.allSettled([
      groupTx(db, () => insert(1)),
      groupTx(db, () => insert(2)), // duplicate key: its error surfaces only with a later round trip
      groupTx(db, () => {
        insert(3);
        return db.prepare('SELECT count(*) AS n FROM g').get(); // a read: the round trip that carries request 2's write
      }),
      groupTx(db, () => insert(4)),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).to.have.property('code', '23505');
    expect(ids()).to.deep.equal([1, 2, 3, 4]);
  });

  it('a failure found only at COMMIT is refused alone too', async () => {
    insert(2);
    const results = await Promise.allSettled([groupTx(db, () => insert(1)), groupTx(db, () => insert(2))]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected']);
    expect(ids()).to.deep.equal([1, 2]);
    expect(db.inTransaction).to.equal(false);
    insert(5); // the connection is usable
    expect(ids()).to.deep.equal([1, 2, 5]);
  });

  it('a request that throws after writing leaves none of its writes (it runs without a savepoint: the turn runs again)', async () => {
    const results = await Promise.allSettled([
      groupTx(db, () => insert(1)),
      groupTx(db, () => {
        insert(2);
        insert(3);
        throw new Error('insufficient credits');
      }),
      groupTx(db, () => insert(4)),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).to.equal('insufficient credits');
    expect(ids()).to.deep.equal([1, 4]);
  });

  it('work that joins an open turn (the delivery loop) is never undone by a later request failing', async () => {
    const turn = [groupTx(db, () => insert(1)), groupTx(db, () => insert(2))] as Promise<unknown>[];
    db.transaction(() => insert(10))(); // another component's transaction, joining the open turn as a savepoint
    db.prepare('INSERT INTO g (id, v) VALUES (?, ?)').run(11, 'direct'); // a write at the turn's top level
    turn.push(
      groupTx(db, () => {
        insert(3);
        throw new Error('insufficient credits');
      }),
      groupTx(db, () => insert(4)),
    );
    const results = await Promise.allSettled(turn);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(ids()).to.deep.equal([1, 2, 4, 10, 11]);
  });

  it('loop work meeting an open turn commits the turn first and runs on its own (a deadlock replay cannot undo it)', async () => {
    let answered = false;
    const turn = groupTx(db, () => insert(1)).then(() => (answered = true));
    expect(db.inTransaction, 'the turn is open').to.equal(true);
    lightTx(db, () => insert(10)); // the delivery loop's results, say
    expect(db.inTransaction, 'the turn was committed before it, and it in its own transaction').to.equal(false);
    const later = groupTx(db, () => insert(2)); // a new turn
    await Promise.all([turn, later]);
    expect(answered).to.equal(true);
    expect(ids()).to.deep.equal([1, 2, 10]);
  });

  it('a request that throws before writing costs no second run of its turn', async () => {
    let runs = 0;
    const results = await Promise.allSettled([
      groupTx(db, () => (runs++, insert(1))),
      groupTx(db, () => {
        throw new Error('invalid');
      }),
      groupTx(db, () => insert(2)),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect(runs).to.equal(1);
    expect(ids()).to.deep.equal([1, 2]);
  });

  it('txMemo reads once per transaction and key; forgetMemo and a new transaction read again', () => {
    let reads = 0;
    const read = () => txMemo(db, 'g:all', () => (reads++, ids()));
    db.transaction(() => {
      insert(1);
      expect(read()).to.deep.equal([1]);
      expect(read()).to.deep.equal([1]);
      expect(reads).to.equal(1);
      forgetMemo(db, 'g:');
      insert(2);
      expect(read()).to.deep.equal([1, 2]);
      expect(reads).to.equal(2);
    })();
    db.transaction(() => expect(read()).to.deep.equal([1, 2]))();
    expect(reads).to.equal(3);
    read(); // outside a transaction: never remembered
    read();
    expect(reads).to.equal(5);
  });

  it('getLater sends its read with the next statement that needs an answer', () => {
    insert(1, 'a');
    insert(2, 'b');
    const byId = db.prepare('SELECT v FROM g WHERE id = ?');
    db.transaction(() => {
      const before = pg.client.roundTrips;
      const first = getLater(byId, 1);
      const second = byId.get(2);
      expect(first()).to.deep.equal({ v: 'a' });
      expect(second).to.deep.equal({ v: 'b' });
      expect(pg.client.roundTrips - before).to.equal(1);
      const alone = getLater(byId, 3); // nothing else asks: read when called
      expect(alone()).to.equal(undefined);
    })();
  });
});

describe('PostgreSQL: statements planned for their values every time (PLAN_EACH_TIME)', function () {
  this.timeout(60_000);
  let db: DB;
  before(async function () {
    if (!pgBinDir() && !process.env.MTA_TEST_PG_URL) this.skip();
    db = openPg(await createDatabase((await sharedPg()).url));
  });
  after(() => db?.close());

  const prepared = () => db.prepare('SELECT statement FROM pg_prepared_statements').pluck().all() as string[];

  it('a statement marked PLAN_EACH_TIME is sent unnamed, so it never keeps a generic plan; others are prepared', () => {
    const marked = db.prepare(`${PLAN_EACH_TIME} SELECT id FROM teams WHERE id = ANY(?::text[])`);
    const plain = db.prepare('SELECT id FROM teams WHERE id = ?');
    for (let i = 0; i < 7; i++) {
      expect(marked.all('{a,b}')).to.deep.equal([]); // past the five runs after which a named statement goes generic
      expect(plain.all('a')).to.deep.equal([]);
    }
    const names = prepared();
    expect(names.some((s) => s.includes('WHERE id = $1'))).to.equal(true);
    expect(names.some((s) => s.includes('ANY('))).to.equal(false);
  });

  it('the delivery claim, the read of the claimed emails, and the claims confirmed or released by id are marked', () => {
    const now = Date.now();
    tx(db, () => {
      expect(runSync(claimDue(db, now, now + 60_000, 10))).to.deep.equal([]);
      runSync(readEmailsAhead(db, [1, 2]));
      expect(runSync(emailBySeq(db, 1))).to.equal(undefined);
      expect(runSync(confirmClaims(db, [1, 2], [now, now], now + 60_000)).size).to.equal(0);
      expect(runSync(releaseClaims(db, [1, 2], now))).to.equal(0);
    });
    const names = prepared();
    expect(names.some((s) => s.includes('SKIP LOCKED'))).to.equal(false);
    expect(names.some((s) => s.includes('id = ANY'))).to.equal(false); // the claims' confirmation and release
    expect(names.some((s) => s.includes('FROM emails WHERE seq = ANY'))).to.equal(false);
  });
});
