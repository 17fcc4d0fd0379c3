// The asynchronous plan driver on PostgreSQL (src/store/pg/plan-driver.ts, docs/async-store.md step 2), against a
// real cluster: converted store plans answer through the pool as through the synchronous engine; plans wait for the
// server without holding the event loop, several at once; a transaction that fails leaves nothing; one that
// deadlocks with another is run again; writes queued by `fire` go out before the next read and their error reaches
// the plan there. PostgreSQL only (MTA_TEST_ENGINE=pg).
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { openPg, sql, type DB } from '../../src/store/db.js';
import { all, fire, get, getLater, read, run, runPlan, runSync, transaction, type Gen } from '../../src/store/op.js';
import { whenCommitted } from '../../src/store/group-commit.js';
import { PlanPool, runPooled, SingleStatements, usePool } from '../../src/store/pg/plan-driver.js';
import * as suppressions from '../../src/store/suppressions.js';
import { createDatabase, sharedPg } from '../helpers/pg.js';
import { testEngine } from '../helpers/service.js';

describe('PostgreSQL: store plans run asynchronously through a pool', function () {
  this.timeout(60_000);
  let db: DB;
  let pool: PlanPool;
  let url: string;

  before(async function () {
    if (testEngine() !== 'pg') return this.skip(); // PostgreSQL only: MTA_TEST_ENGINE=pg
    url = await createDatabase((await sharedPg()).url);
    db = openPg(url);
    db.exec('CREATE TABLE plan_t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)');
    db.exec('INSERT INTO plan_t (id, v) VALUES (1, 0), (2, 0)');
    pool = new PlanPool(url, 8);
  });
  after(async () => {
    await pool?.end();
    db?.close();
  });

  it('answers a converted family as the synchronous engine does', async () => {
    const row = { team_id: 't1', address: 'a@example.com', reason: 'manual' as const, email_id: null, created_at: 5 };
    expect(await pool.run(suppressions.addSuppression(db, row))).to.equal(true);
    expect(await pool.run(suppressions.addSuppression(db, row))).to.equal(false);
    const viaPool = await pool.run(suppressions.getSuppression(db, 't1', 'a@example.com'));
    expect(viaPool).to.deep.equal(runSync(suppressions.getSuppression(db, 't1', 'a@example.com')));
    expect(viaPool).to.include({ address: 'a@example.com', created_at: 5 });
    expect((await pool.run(suppressions.listSuppressions(db, 't1', null, 10))).map((r) => r.address)).to.deep.equal([
      'a@example.com',
    ]);
    expect(await pool.run(suppressions.removeSuppression(db, 't1', 'a@example.com'))).to.equal(true);
    expect(runSync(suppressions.getSuppression(db, 't1', 'a@example.com'))).to.equal(undefined);
  });

  it('keeps the event loop free while plans wait, and runs several at once', async () => {
    const sleep = sql(db, 'SELECT pg_sleep(0.3) AS slept');
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t0 = Date.now();
    try {
      await Promise.all(Array.from({ length: 8 }, () => pool.run(get(sleep))));
    } finally {
      clearInterval(timer);
    }
    // Eight 300 ms waits one after the other would take 2.4 s; on eight connections they overlap.
    expect(Date.now() - t0).to.be.below(1500);
    expect(ticks).to.be.above(10);
  });

  it('outlives the server ending a connection a plan holds between two statements (57P01); the next plan runs', async () => {
    const { conn, release } = await pool.connection({ db });
    const pid = await conn.drive(get(sql<number>(db, 'SELECT pg_backend_pid()').pluck()));
    // Checked out and idle: pg-pool no longer listens for its errors; an 'error' nobody hears ends the process.
    expect(runSync(get(sql<boolean>(db, 'SELECT pg_terminate_backend(?)').pluck(), pid))).to.equal(true);
    await new Promise((r) => setTimeout(r, 200)); // the FATAL notice and the socket's end reach the client
    let failed: unknown;
    await conn.drive(get(sql(db, 'SELECT 1 AS one'))).catch((e) => (failed = e));
    expect(failed, 'a statement on the ended connection').to.be.instanceOf(Error);
    release(failed);
    expect(await pool.run(get(sql<number>(db, 'SELECT 2').pluck()))).to.equal(2);
  });

  it('leaves nothing of a transaction whose plan fails', async () => {
    const bump = sql(db, 'UPDATE plan_t SET v = v + 1 WHERE id = ?');
    const failing = transaction(db, function* () {
      yield* run(bump, 1);
      throw new Error('refused halfway');
    });
    let err: Error | undefined;
    await pool.run(failing).catch((e: Error) => (err = e));
    expect(err?.message).to.equal('refused halfway');
    expect(await pool.run(get(sql<{ v: number }>(db, 'SELECT v FROM plan_t WHERE id = ?'), 1))).to.deep.equal({ v: 0 });
  });

  it('a pooled transaction holding a lock hangs the synchronous connection that waits for it (why runPooled refuses one)', async () => {
    const lock = sql(db, 'SELECT pg_advisory_xact_lock(9, 1) AS locked');
    let locked!: () => void;
    const holding = new Promise<void>((r) => (locked = r));
    const plan = transaction(db, function* () {
      yield* get(lock);
      locked();
      // Its answer must be read by this thread before the COMMIT goes out.
      yield* get(sql(db, 'SELECT 1 AS one'));
    });
    const pooled = pool.run(plan);
    await holding;
    // The synchronous connection waits for the lock with the event loop stopped: the pooled transaction cannot
    // commit meanwhile. Without lock_timeout this would wait for ever; with it, it fails though the pooled
    // transaction needed a millisecond.
    const t0 = Date.now();
    db.exec('BEGIN');
    let err: Error | undefined;
    try {
      db.exec("SET LOCAL lock_timeout = '800ms'");
      db.prepare('SELECT pg_advisory_xact_lock(9, 1) AS locked').get();
    } catch (e) {
      err = e as Error;
    } finally {
      db.exec('ROLLBACK');
    }
    await pooled;
    expect(err?.message).to.match(/lock timeout/);
    expect(Date.now() - t0).to.be.at.least(700);
    // The service's pool (runPooled) runs single statements only: a transaction is refused before it is sent.
    usePool(db, pool);
    try {
      const bump = sql(db, 'UPDATE plan_t SET v = v + 100 WHERE id = ?');
      let refused: unknown;
      await runPooled(
        db,
        transaction(db, () => run(bump, 1)),
      ).catch((e: unknown) => (refused = e));
      expect(refused).to.be.instanceOf(SingleStatements);
      expect((await runPooled(db, get(sql<{ v: number }>(db, 'SELECT v FROM plan_t WHERE id = ?'), 1)))!.v).to.be.below(
        100,
      );
    } finally {
      usePool(db, null);
    }
  });

  it('runPlan runs on the pool with the locking transactions (the flip): durable writes, waiters after the COMMIT', async () => {
    const light = new PlanPool(url, 1, { light: true });
    const mode = sql<string>(db, 'SHOW synchronous_commit').pluck();
    const bump = sql(db, 'UPDATE plan_t SET v = v + 1 WHERE id = ?');
    const value = sql<number>(db, 'SELECT v FROM plan_t WHERE id = ?').pluck();
    db.exec('INSERT INTO plan_t (id, v) VALUES (3, 0)');
    usePool(db, light, { locking: true });
    try {
      // A read leaves the light session as it is; a write outside a transaction makes it wait for the WAL flush, and
      // the next plan (the same connection: a pool of one) finds it light again.
      expect(await runPlan(db, get(mode))).to.equal('off');
      const before = light.statements;
      const during = await runPlan(
        db,
        (function* () {
          yield* run(bump, 3);
          return yield* get(mode);
        })(),
      );
      expect(during).to.equal('on');
      expect(light.statements - before, 'on the pool').to.be.at.least(2);
      expect(await runPlan(db, get(mode))).to.equal('off');
      // A transaction's waiters (whenCommitted: the dispatcher's wake-up, a poke) run once its COMMIT is in: another
      // connection sees the write then. One rolled back runs none.
      const seen: number[] = [];
      const was = runSync(get(value, 3))!;
      await runPlan(
        db,
        transaction(db, function* () {
          yield* run(bump, 3);
          whenCommitted(db, () => seen.push(Number(runSync(get(value, 3)))));
          return yield* get(mode);
        }),
      );
      await new Promise((r) => setTimeout(r, 50));
      // Run before the COMMIT, it would have read the value as it was.
      expect(seen).to.deep.equal([Number(was) + 1]);
      const failed = await runPlan(
        db,
        transaction(db, function* () {
          yield* run(bump, 3);
          whenCommitted(db, () => seen.push(-1));
          throw new Error('undone');
        }),
      ).catch((e: Error) => e.message);
      expect(failed).to.equal('undone');
      await new Promise((r) => setTimeout(r, 50));
      expect(seen).to.deep.equal([Number(was) + 1]);
    } finally {
      usePool(db, null);
      await light.end();
      db.exec('DELETE FROM plan_t WHERE id = 3');
    }
    // Without the pool: at once on the synchronous connection, as before.
    expect(await runPlan(db, get(mode))).to.equal('on');
  });

  it('runs a transaction again after a deadlock with another one, and both commit', async () => {
    const bump = sql(db, 'UPDATE plan_t SET v = v + 1 WHERE id = ?');
    const pause = sql(db, 'SELECT pg_sleep(0.2) AS slept');
    let attempts = 0;
    const crossing = (first: number, second: number) =>
      transaction(db, function* () {
        attempts++;
        yield* run(bump, first);
        yield* get(pause);
        yield* run(bump, second);
      });
    await Promise.all([pool.run(crossing(1, 2)), pool.run(crossing(2, 1))]);
    expect(attempts).to.be.at.least(3); // one of the two was refused (40P01) and ran again
    const rows = await pool.run(all(sql<{ id: number; v: number }>(db, 'SELECT id, v FROM plan_t ORDER BY id')));
    expect(rows).to.deep.equal([
      { id: 1, v: 2 },
      { id: 2, v: 2 },
    ]);
  });

  it('sends queued writes before the next read, which sees them; a queued write’s error reaches the plan there', async () => {
    const put = sql(db, 'INSERT INTO plan_t (id, v) VALUES (?, ?)');
    const count = sql<number>(db, 'SELECT count(*) AS n FROM plan_t WHERE id >= 10').pluck();
    const before = pool.statements;
    const seen = await pool.run(
      (function* (): Gen<{ later: number | undefined; now: number | undefined }> {
        yield* fire(put, 10, 1);
        yield* fire(put, 11, 1);
        const later = yield* getLater(count);
        yield* fire(put, 12, 1);
        const now = yield* get(count);
        return { later: yield* read(later), now };
      })(),
    );
    expect(seen).to.deep.equal({ later: 2, now: 3 });
    expect(pool.statements - before).to.equal(5);
    let caught: { code?: string } | undefined;
    const answer = await pool.run(
      (function* () {
        yield* fire(put, 10, 1); // a duplicate key: refused when it goes out, with the get below
        try {
          return yield* get(count);
        } catch (err) {
          caught = err as { code?: string };
          return -1;
        }
      })(),
    );
    expect(answer).to.equal(-1);
    expect(caught?.code).to.equal('23505');
  });

  it('sends a transaction’s BEGIN, queued writes and next read in one round trip, the rest with its COMMIT', async () => {
    const put = sql(db, 'INSERT INTO plan_t (id, v) VALUES (?, ?)');
    const count = sql<number>(db, 'SELECT count(*) AS n FROM plan_t WHERE id >= 20').pluck();
    const [trips, statements] = [pool.roundTrips, pool.statements];
    const seen = await pool.run(
      transaction(db, function* () {
        yield* fire(put, 20, 1);
        yield* fire(put, 21, 1);
        const n = yield* get(count); // BEGIN, two INSERTs and this read: one round trip
        yield* fire(put, 22, 1); // with the COMMIT
        return n;
      }),
    );
    expect(seen).to.equal(2);
    // BEGIN, the two INSERTs as one (merged as the synchronous client merges them, store/pg/coalesce.ts), the read,
    // the last INSERT and the COMMIT.
    expect(pool.statements - statements).to.equal(5);
    expect(pool.roundTrips - trips).to.equal(2);
    expect(await pool.run(get(count))).to.equal(3);
    // A refused write in the pipeline fails the transaction at the read it travelled with; nothing of it is kept.
    const failing = transaction(db, function* () {
      yield* fire(put, 23, 1);
      yield* fire(put, 20, 1); // a duplicate key
      return yield* get(count);
    });
    const err = await pool.run(failing).then(
      () => undefined,
      (e: { code?: string }) => e,
    );
    expect(err?.code).to.equal('23505');
    expect(await pool.run(get(count))).to.equal(3);
  });

  it('merges a transaction’s queued INSERTs of one statement, each run answered with its own row', async () => {
    db.exec('CREATE TABLE plan_ids (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v BIGINT NOT NULL)');
    (db as unknown as { loadCatalog(): void }).loadCatalog(); // its identity column: run() answers lastInsertRowid
    const put = sql(db, 'INSERT INTO plan_ids (v) VALUES (?)');
    const count = sql<number>(db, 'SELECT count(*) AS n FROM plan_ids').pluck();
    const statements = pool.statements;
    const { n, ids } = await pool.run(
      transaction(db, function* () {
        const outs = [];
        for (const v of [10, 11, 12, 13, 14]) outs.push(yield* run(put, v)); // queued (lazyRuns), not waited for
        const n = yield* get(count);
        return { n, ids: outs.map((o) => o.lastInsertRowid) };
      }),
      { db, lazyRuns: true },
    );
    expect(n).to.equal(5);
    // BEGIN, the five INSERTs as two (4 rows and 1: coalesce.ts's chunks), the read, COMMIT; eight one by one.
    expect(pool.statements - statements).to.equal(5);
    const rows = await pool.run(all(sql<{ id: number; v: number }>(db, 'SELECT id, v FROM plan_ids ORDER BY v')));
    expect(ids).to.deep.equal(rows.map((r) => r.id));
    expect(new Set(ids).size).to.equal(5);
  });

  it('really pipelines: through 100 ms each way, a transaction of six statements takes two round trips', async () => {
    const target = new URL((db as unknown as { url: string }).url);
    const proxy = spawn(process.execPath, ['--import', 'tsx', 'scripts/pg-delay-proxy.ts', target.host, '100'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        proxy.stdout.on('data', (b: Buffer) => {
          const m = /port=(\d+)/.exec(b.toString());
          if (m) resolve(Number(m[1]));
        });
        proxy.once('exit', () => reject(new Error('the delay proxy exited')));
      });
      target.host = `127.0.0.1:${port}`;
      const far = new PlanPool(target.toString(), 1);
      try {
        const put = sql(db, 'INSERT INTO plan_t (id, v) VALUES (?, ?)');
        const count = sql<number>(db, 'SELECT count(*) AS n FROM plan_t WHERE id >= 30').pluck();
        await far.run(get(count)); // the connection opened
        const t0 = Date.now();
        const n = await far.run(
          transaction(db, function* () {
            yield* fire(put, 30, 1);
            yield* fire(put, 31, 1);
            const n = yield* get(count);
            yield* fire(put, 32, 1);
            return n;
          }),
        );
        const ms = Date.now() - t0;
        expect(n).to.equal(2);
        // Six statements one after another: six round trips, 1.2 s at least; pipelined: two (~0.4 s).
        expect(ms).to.be.within(350, 900);
      } finally {
        await far.end();
      }
    } finally {
      proxy.kill();
    }
  });
});
