// PostgreSQL with commitAhead (`mta serve`'s store by default): a group-commit turn's writes and COMMIT are sent without
// waiting, this thread goes on (the next turn's requests run meanwhile), and each request is answered only once the
// server's answer is read. A failure found in that answer still fails only its own request; work that must see the
// writes (a component's wake-up) waits for the answer; a read meanwhile first takes the answer.
import { expect } from 'chai';
import pgLib from 'pg';
import { PgDatabase } from '../../src/store/pg/database.js';
import { getLater, type DB } from '../../src/store/db.js';
import { afterCommit, groupTx, openTurn, whenCommitted } from '../../src/store/group-commit.js';
import { createDatabase, pgBinDir, sharedPg } from '../helpers/pg.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PostgreSQL: a turn committed ahead (COMMIT sent without waiting)', function () {
  this.timeout(60_000);
  let pg: PgDatabase;
  let db: DB;
  let url: string;
  let other: pgLib.Client;
  before(async function () {
    if (!pgBinDir() && !process.env.MTA_TEST_PG_URL) this.skip();
    url = await createDatabase((await sharedPg()).url);
    pg = new PgDatabase(url);
    if (pg.client.transport !== 'libpq') this.skip(); // the worker-thread transport always waits
    pg.commitAhead = true;
    pg.exec('CREATE TABLE g (id BIGINT PRIMARY KEY, v TEXT)');
    pg.loadCatalog();
    db = pg as unknown as DB;
  });
  after(() => pg?.close());
  beforeEach(async () => {
    pg.exec('DELETE FROM g');
    other = new pgLib.Client({ connectionString: url });
    await other.connect();
  });
  afterEach(() => other.end());

  const insert = (id: number, v = 'x') => db.prepare('INSERT INTO g (id, v) VALUES (?, ?)').run(id, v);
  const ids = () => (db.prepare('SELECT id FROM g ORDER BY id').pluck().all() as number[]).map(Number);
  /** Another session holds an uncommitted row `id`; it ends (COMMIT or ROLLBACK) after `ms`. */
  async function holdRow(id: number, ms: number, end: 'COMMIT' | 'ROLLBACK') {
    await other.query('BEGIN');
    await other.query('INSERT INTO g (id, v) VALUES ($1, $2)', [id, 'other']);
    return { ending: other.query(`SELECT pg_sleep(${ms / 1000}); ${end}`) };
  }

  it('the thread is free while the server runs the turn; its requests are answered only after the COMMIT', async () => {
    const { ending } = await holdRow(7, 500, 'ROLLBACK'); // the turn's INSERT of 7 waits for that session
    const order: string[] = [];
    const turn = groupTx(db, () => insert(7, 'turn')).then(() => order.push('answered'));
    let committed: boolean | undefined;
    void groupTx(db, () => afterCommit(db, (ok) => (committed = ok)));
    await sleep(100); // the turn went out at the end of its event-loop turn
    order.push('timer'); // a blocking COMMIT would have held this thread until the other session ended
    expect(pg.client.inFlight, 'the COMMIT is in flight').to.equal(true);
    expect(committed, 'afterCommit waits for the answer').to.equal(undefined);
    await ending;
    await turn;
    expect(order).to.deep.equal(['timer', 'answered']);
    expect(committed).to.equal(true);
    expect(pg.client.inFlight).to.equal(false);
    expect(db.prepare('SELECT v FROM g WHERE id = 7').pluck().get()).to.equal('turn');
  });

  /** A turn of `n` requests (one event-loop turn), inserting ids from `from`. */
  const turnOf = (from: number, n = 8) =>
    Promise.all(Array.from({ length: n }, (_, i) => groupTx(db, () => insert(from + i))));

  it('the next turns run while one is in flight and queue behind it on the server, three at most', async () => {
    const { ending } = await holdRow(7, 1500, 'ROLLBACK'); // long enough for every check below, on a busy box
    const first = groupTx(db, () => insert(7));
    await sleep(50);
    expect(pg.client.inFlight).to.equal(true);
    let ran = false;
    const small = groupTx(db, () => {
      ran = true;
      insert(8);
    });
    expect(ran, 'the second turn ran its request at once (writes deferred)').to.equal(true);
    await sleep(20);
    expect(pg.client.inFlightCount, 'a turn of one request waits for the answer, gathering').to.equal(1);
    const second = turnOf(20); // joins the small turn still open: nine requests, sent behind the first
    await sleep(20);
    expect(pg.client.inFlightCount, 'sent behind the first, without waiting for its answer').to.equal(2);
    const third = turnOf(30);
    await sleep(20);
    const fourth = turnOf(40);
    await sleep(20);
    expect(pg.client.inFlightCount, 'the fourth gathers until the first is answered').to.equal(3);
    expect(openTurn(db), 'the fourth turn is open').to.not.equal(undefined);
    await Promise.all([ending, first, small, second, third, fourth]);
    const all = [7, 8, ...[20, 30, 40].flatMap((f) => Array.from({ length: 8 }, (_, i) => f + i))];
    expect(ids()).to.deep.equal(all);
    expect(pg.client.inFlightCount).to.equal(0);
  });

  it('a small turn held behind two in flight is sent once they are answered, with no request after it', async () => {
    const { ending } = await holdRow(7, 1000, 'ROLLBACK');
    const first = groupTx(db, () => insert(7));
    await sleep(20);
    const second = turnOf(20);
    await sleep(20);
    expect(pg.client.inFlightCount).to.equal(2);
    const small = groupTx(db, () => insert(9));
    await sleep(20);
    expect(openTurn(db), 'held, gathering').to.not.equal(undefined);
    await Promise.all([ending, first, second, small]); // would never settle if nothing looked at it again
    expect(ids()).to.include.members([7, 9, 20, 27]);
  });

  it('turns sent behind one refused in its answer ran in its aborted transaction: they run again and commit', async () => {
    const { ending } = await holdRow(5, 800, 'COMMIT'); // then the first turn's INSERT of 5 is a duplicate
    const firstTurn = [groupTx(db, () => insert(4)), groupTx(db, () => insert(5, 'turn'))];
    await sleep(50);
    let runs = 0;
    const behind = [
      groupTx(db, () => {
        runs++;
        insert(6);
      }),
      turnOf(10, 7),
    ];
    await sleep(20);
    expect(pg.client.inFlightCount, 'the second turn went out behind the first').to.equal(2);
    const results = await Promise.allSettled([...firstTurn, ...behind]);
    await ending;
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as { code?: string }).code).to.equal('23505');
    expect(runs, 'the turn behind ran again after the answers').to.equal(2);
    expect(ids()).to.deep.equal([4, 5, 6, 10, 11, 12, 13, 14, 15, 16]);
    expect(db.prepare('SELECT v FROM g WHERE id = 5').pluck().get()).to.equal('other');
  });

  it('a transaction sent behind a refused turn (a results batch) is told to run again, nothing of it kept', async () => {
    const { ending } = await holdRow(5, 800, 'COMMIT');
    const turn = groupTx(db, () => insert(5, 'turn')).catch((e: { code?: string }) => e.code);
    await sleep(50);
    let told: { code?: string } | null | undefined;
    pg.transactionLater(
      () => insert(6),
      (err) => (told = err),
    );
    expect(pg.client.inFlightCount).to.equal(2);
    expect(await turn).to.equal('23505');
    await ending;
    await sleep(0);
    expect(told?.code, 'refused only because the turn before it failed: REPLAY').to.equal('MTA_REPLAY');
    expect(ids()).to.deep.equal([5]);
  });

  it('a write refused in the answer fails only its own request: the others of its turn run again and commit', async () => {
    const { ending } = await holdRow(5, 300, 'COMMIT'); // then the turn's INSERT of 5 is a duplicate
    let runs = 0;
    const results = await Promise.allSettled([
      groupTx(db, () => insert(4)),
      groupTx(db, () => insert(5, 'turn')),
      groupTx(db, () => {
        runs++;
        insert(6);
      }),
    ]);
    await ending;
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as { code?: string }).code).to.equal('23505');
    expect(runs, 'the turn ran again after the answer').to.equal(2);
    expect(ids()).to.deep.equal([4, 5, 6]);
    expect(db.prepare('SELECT v FROM g WHERE id = 5').pluck().get()).to.equal('other');
  });

  it('a turn that waited for an answer (a read: a live credit charge, say) commits before the thread goes on', async () => {
    const { ending } = await holdRow(3, 300, 'ROLLBACK');
    let answered = false;
    const turn = groupTx(db, () => {
      ids(); // a round trip inside the turn
      insert(3);
    }).then(() => (answered = true));
    await sleep(50); // the flush at the end of the event-loop turn waited for the COMMIT (the other session's 300 ms)
    expect(pg.client.inFlight, 'nothing in flight').to.equal(false);
    expect(answered, 'answered before this timer could run').to.equal(true);
    await Promise.all([ending, turn]);
    expect(ids()).to.deep.equal([3]);
  });

  it('a read that travelled with the COMMIT in flight is answered from that answer, with no round trip of its own', async () => {
    const { ending } = await holdRow(2, 200, 'ROLLBACK');
    let count: () => unknown = () => undefined;
    const first = groupTx(db, () => {
      insert(2);
      count = getLater(db.prepare('SELECT count(*) AS n FROM g').pluck()); // sent with this turn's COMMIT
    });
    await sleep(50);
    expect(pg.client.inFlight).to.equal(true);
    const trips = pg.client.roundTrips;
    let n: unknown;
    const second = groupTx(db, () => {
      insert(3);
      n = count(); // waits for the answer in flight, and sends nothing of this turn
    });
    expect(n).to.equal(1);
    expect(pg.client.roundTrips - trips, 'no round trip in the second turn').to.equal(0);
    await Promise.all([ending, first, second]);
    expect(ids()).to.deep.equal([2, 3]);
  });

  it('a turn gathering while another is in flight is a turn of its own: its work waits for its own COMMIT', async () => {
    const { ending } = await holdRow(7, 300, 'ROLLBACK');
    let turnA: object | undefined;
    const a = groupTx(db, () => {
      insert(7);
      turnA = openTurn(db);
    });
    await sleep(50);
    expect(pg.client.inFlight).to.equal(true);
    let turnB: object | undefined;
    let seen: number[] | undefined;
    const b = groupTx(db, () => {
      insert(8);
      turnB = openTurn(db);
      whenCommitted(db, () => (seen = ids())); // a component's wake-up, say: it must find row 8
    });
    expect(turnB).to.not.equal(undefined);
    expect(turnB, 'not the turn in flight').to.not.equal(turnA);
    await Promise.all([ending, a, b]);
    await sleep(0);
    expect(seen).to.deep.equal([7, 8]);
  });

  it("whenCommitted waits for the open turn's answer; a read meanwhile takes the answer first", async () => {
    const { ending } = await holdRow(9, 300, 'ROLLBACK');
    const seen: number[][] = [];
    const turn = groupTx(db, () => {
      insert(9);
      whenCommitted(db, () => seen.push(ids()));
    });
    await sleep(50);
    expect(seen, 'not before the answer').to.deep.equal([]);
    const t0 = Date.now();
    expect(ids(), 'a read waits for the COMMIT ahead of it').to.deep.equal([9]);
    expect(Date.now() - t0).to.be.greaterThan(100);
    await Promise.all([ending, turn]);
    await sleep(0);
    expect(seen).to.deep.equal([[9]]);
  });
});
