// Group commit on SQLite (store/db.ts): the turn's COMMIT is written without an fsync on the event loop, the WAL file
// is flushed with fdatasync on libuv's pool, and only then are the turn's requests answered (and their afterCommit
// callbacks told). A failed flush fails them; a request that threw is told false.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { atomically, openDb, type DB } from '../../src/store/db.js';
import { afterCommit, groupTx } from '../../src/store/group-commit.js';
import { tempDir, testEngine } from '../helpers/service.js';

describe('SQLite group commit: durable answers with the fsync off the event loop', function () {
  let dir: string;
  let db: DB;
  const original = fs.fdatasync;
  before(function () {
    if (testEngine() === 'pg') this.skip(); // the SQLite engine's own; the PostgreSQL run has pg-group-commit
    dir = tempDir('mta-group-');
    db = openDb(dir);
    db.exec('CREATE TABLE g (id INTEGER PRIMARY KEY, v TEXT)');
  });
  after(() => db?.close());
  afterEach(() => {
    fs.fdatasync = original;
  });
  const ids = () => db.prepare('SELECT id FROM g ORDER BY id').pluck().all() as number[];
  const insert = (id: number) => db.prepare('INSERT INTO g (id, v) VALUES (?, ?)').run(id, 'x');

  it('answers a turn only after its WAL file is flushed, with synchronous back to FULL', async () => {
    const flushed: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    fs.fdatasync = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      flushed.push(fs.fstatSync(fd).ino);
      void gate.then(() => original(fd, cb));
    }) as typeof fs.fdatasync;
    let answered = 0;
    const turn = [1, 2, 3].map((id) => groupTx(db, () => insert(id)).then(() => answered++));
    await new Promise((r) => setTimeout(r, 50));
    expect(ids(), 'committed').to.deep.equal([1, 2, 3]);
    expect(answered, 'no answer before the flush').to.equal(0);
    expect(flushed, 'one flush of the WAL file for the turn').to.deep.equal([
      fs.statSync(path.join(dir, 'mta.sqlite-wal')).ino,
    ]);
    expect(db.pragma('synchronous', { simple: true })).to.equal(2);
    release();
    await Promise.all(turn);
    expect(answered).to.equal(3);
  });

  it('a failed flush fails every request of the turn; afterCommit tells each one false', async () => {
    fs.fdatasync = ((_fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
      setImmediate(() => cb(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })));
    }) as typeof fs.fdatasync;
    const told: boolean[] = [];
    const results = await Promise.allSettled(
      [10, 11].map((id) =>
        groupTx(db, () => {
          insert(id);
          afterCommit(db, (ok) => told.push(ok));
        }),
      ),
    );
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason.code).to.equal('EIO');
    expect(told).to.deep.equal([false, false]);
  });

  it('afterCommit: true once committed, false for a request that threw, unavailable outside a turn', async () => {
    const told: [number, boolean][] = [];
    const results = await Promise.allSettled([
      groupTx(db, () => {
        insert(20);
        afterCommit(db, (ok) => told.push([20, ok]));
      }),
      groupTx(db, () => {
        insert(21);
        afterCommit(db, (ok) => told.push([21, ok]));
        throw new Error('insufficient credits');
      }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected']);
    expect(told.sort()).to.deep.equal([
      [20, true],
      [21, false],
    ]);
    expect(ids()).to.include(20).and.not.include(21);
    expect(afterCommit(db, () => told.push([0, true]))).to.equal(false);
  });

  it('atomically: a failing savepoint undoes only its own writes; a failing transaction undoes all of them', () => {
    db.exec('DELETE FROM g');
    const fail = () => {
      throw new Error('no');
    };
    const kept = atomically(db, () => {
      insert(100);
      expect(() =>
        atomically(db, () => {
          insert(101);
          fail();
        }),
      ).to.throw('no');
      atomically(db, () => insert(102));
      return 'done';
    });
    expect(kept).to.equal('done');
    expect(ids()).to.deep.equal([100, 102]);
    expect(() =>
      atomically(
        db,
        () => {
          insert(103);
          atomically(db, () => insert(104));
          fail();
        },
        true,
      ),
    ).to.throw('no');
    expect(ids()).to.deep.equal([100, 102]);
    expect(db.inTransaction).to.equal(false);
  });
});
