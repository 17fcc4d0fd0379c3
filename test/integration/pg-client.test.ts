// The synchronous PostgreSQL clients (src/store/pg/sync-client.ts) against a real throwaway cluster: both
// transports (libpq on this thread, pg on a worker thread) read types alike, and a batch (libpq: one pipeline)
// stops at its first error, filling in the statements that ran before it and throwing that error.
import { expect } from 'chai';
import { openSyncClient } from '../../src/store/pg/clients.js';
import type { Deferred, SyncClient } from '../../src/store/pg/sync-client.js';
import { createDatabase, pgBinDir, sharedPg } from '../helpers/pg.js';

describe('PostgreSQL synchronous clients', function () {
  this.timeout(60_000);
  let url: string;
  before(async function () {
    if (!pgBinDir()) this.skip(); // no PostgreSQL binaries here (bash .ci/run installs them)
    url = await createDatabase((await sharedPg()).url);
  });

  for (const transport of ['libpq', 'worker'] as const) {
    describe(transport, () => {
      let c: SyncClient;
      before(function () {
        const prev = process.env.MTA_PG_CLIENT;
        process.env.MTA_PG_CLIENT = transport === 'worker' ? 'worker' : '';
        try {
          c = openSyncClient(url);
        } finally {
          if (prev === undefined) delete process.env.MTA_PG_CLIENT;
          else process.env.MTA_PG_CLIENT = prev;
        }
        if (c.transport !== transport) this.skip(); // the libpq binding is not built here
        c.query(`CREATE TABLE IF NOT EXISTS t_${transport} (id BIGINT PRIMARY KEY, b BYTEA, s TEXT, n NUMERIC)`);
      });
      after(() => c?.close());

      it('reads int8 and numeric as numbers, bytea as Buffers, NULL as null; counts affected rows', () => {
        const ins = c.query(
          `INSERT INTO t_${transport} (id, b, s, n) VALUES ($1, $2, $3, $4), ($5, NULL, NULL, NULL)`,
          [1795000000000, Buffer.from([0, 1, 255]), 'x', 2.5, 2],
        );
        expect(ins.rowCount).to.equal(2);
        const rows = c.query(`SELECT id, b, s, n, count(*) OVER () AS total FROM t_${transport} ORDER BY id`, [], {
          name: `sel_${transport}`,
        }).rows as Record<string, unknown>[];
        expect(rows).to.deep.equal([
          { id: 2, b: null, s: null, n: null, total: 2 },
          { id: 1795000000000, b: Buffer.from([0, 1, 255]), s: 'x', n: 2.5, total: 2 },
        ]);
        expect(Buffer.isBuffer(rows[1].b)).to.equal(true);
        const arr = c.query(`SELECT id FROM t_${transport} WHERE id = $1`, [2], { array: true }).rows;
        expect(arr).to.deep.equal([[2]]);
      });

      it('sends deferred statements with the next query; the first error stops the batch and is thrown', () => {
        c.query('BEGIN');
        const a: Deferred = {};
        const b: Deferred = {};
        const after: Deferred = {};
        // Three different statements, so none is merged with another (see the next test).
        c.defer(`INSERT INTO t_${transport} (id) VALUES ($1)`, [10], { name: `ins_${transport}` }, a);
        c.defer(`INSERT INTO t_${transport} (id, s) VALUES ($1, 'b')`, [10], { name: `insb_${transport}` }, b); // duplicate key
        c.defer(`UPDATE t_${transport} SET s = 'c' WHERE id = $1`, [11], { name: `upd_${transport}` }, after);
        const before = c.roundTrips;
        expect(() => c.query(`SELECT 1`))
          .to.throw(/duplicate key/)
          .with.property('code', '23505');
        expect(c.roundTrips - before, 'one round trip for the batch').to.equal(1);
        expect(a).to.include({ done: true, rowCount: 1 });
        expect(b.done, 'the failing statement').to.equal(undefined);
        expect(after.done, 'never ran').to.equal(undefined);
        c.query('ROLLBACK');
        expect(c.query(`SELECT count(*) AS n FROM t_${transport} WHERE id BETWEEN 10 AND 11`).rows).to.deep.equal([
          { n: 0 },
        ]);
        // The connection is usable again, and the statement prepared in the failed batch too.
        c.query(`INSERT INTO t_${transport} (id) VALUES ($1)`, [12], { name: `ins_${transport}` });
        expect(c.query(`SELECT id FROM t_${transport} WHERE id = 12`).rows).to.deep.equal([{ id: 12 }]);
      });

      it('sends deferred runs of one INSERT as multi-row statements, each answered with its own row', () => {
        const text = `INSERT INTO t_${transport} (id, s) VALUES ($1, $2 || '!') RETURNING id, s`;
        const name = `insr_${transport}`;
        c.query('BEGIN');
        const into: Deferred[] = [20, 21, 22, 23, 24].map(() => ({}));
        into.forEach((d, i) => c.defer(text, [20 + i, `r${i}`], { name }, d));
        const before = c.queries;
        c.query('SELECT 1');
        expect(c.queries - before, 'a 4-row INSERT, a 1-row INSERT and the SELECT').to.equal(3);
        into.forEach((d, i) =>
          expect(d).to.deep.include({ done: true, rowCount: 1, rows: [{ id: 20 + i, s: `r${i}!` }] }),
        );
        // A duplicate key fails the merged statement as a whole: none of its rows is written.
        const dup: Deferred[] = [30, 31, 32, 30].map(() => ({}));
        [30, 31, 32, 30].forEach((id, i) => c.defer(text, [id, 'x'], { name }, dup[i]));
        expect(() => c.query('SELECT 1'))
          .to.throw(/duplicate key/)
          .with.property('code', '23505');
        expect(dup.map((d) => d.done)).to.deep.equal([undefined, undefined, undefined, undefined]);
        c.query('ROLLBACK');
        expect(c.query(`SELECT count(*) AS n FROM t_${transport} WHERE id BETWEEN 20 AND 40`).rows).to.deep.equal([
          { n: 0 },
        ]);
      });

      it('merges blind ON CONFLICT DO NOTHING INSERTs: rows conflicting with the table or with each other are skipped', () => {
        const text = `INSERT INTO t_${transport} (id, s) VALUES ($1, $2) ON CONFLICT DO NOTHING`;
        const name = `insi_${transport}`;
        c.query('BEGIN');
        c.query(`INSERT INTO t_${transport} (id, s) VALUES (50, 'first')`);
        const rows: [number, string][] = [
          [50, 'again'],
          [51, 'a'],
          [52, 'b'],
          [51, 'twice'],
        ];
        rows.forEach(([id, v]) => c.defer(text, [id, v], { name, blind: true }));
        const before = c.queries;
        c.query('SELECT 1');
        expect(c.queries - before, 'one 4-row INSERT and the SELECT').to.equal(2);
        expect(c.query(`SELECT id, s FROM t_${transport} WHERE id BETWEEN 50 AND 59 ORDER BY id`).rows).to.deep.equal([
          { id: 50, s: 'first' },
          { id: 51, s: 'a' },
          { id: 52, s: 'b' },
        ]);
        c.query('ROLLBACK');
      });
    });
  }
});
