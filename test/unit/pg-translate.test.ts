// The mechanical SQLite → PostgreSQL translation of the store's statements (src/store/pg/translate.ts).
import { expect } from 'chai';
import { bindValues, translate } from '../../src/store/pg/translate.js';

const catalog = { primaryKeys: new Map([['idempotency', ['team_id', 'key']]]) };
const pg = (sql: string) => translate(sql, catalog).text;

describe('SQLite → PostgreSQL statement translation', () => {
  it('numbers positional parameters and leaves string literals and quoted names alone', () => {
    expect(pg("SELECT '?', \"a?\" FROM t WHERE a = ? AND b = ? AND c = '@x'")).to.equal(
      "SELECT '?', \"a?\" FROM t WHERE a = $1 AND b = $2 AND c = '@x'",
    );
  });

  it('maps named parameters to $n once per name, in order of first use, and binds them by name', () => {
    const t = translate('UPDATE t SET a = @a, b = @b WHERE a <> @a AND id = @id', catalog);
    expect(t.text).to.equal('UPDATE t SET a = $1, b = $2 WHERE a <> $1 AND id = $3');
    expect(bindValues(t, [{ id: 7, b: null, a: 'x', extra: 1 }])).to.deep.equal(['x', null, 7]);
    expect(() => bindValues(t, [{ a: 1 }])).to.throw(/Missing named parameter "b"/);
    // PostgreSQL text never holds NUL: replaced, never an error half-way through a transaction.
    expect(bindValues(translate('SELECT ?', catalog), ['a\0b'])).to.deep.equal(['a\uFFFDb']);
  });

  it('turns INSERT OR IGNORE into ON CONFLICT DO NOTHING, before a RETURNING clause', () => {
    expect(pg('INSERT OR IGNORE INTO tags (a, b) VALUES (?, ?)')).to.equal(
      'INSERT INTO tags (a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    );
    expect(pg('INSERT OR IGNORE INTO tags (a) VALUES (?) RETURNING a')).to.equal(
      'INSERT INTO tags (a) VALUES ($1) ON CONFLICT DO NOTHING RETURNING a',
    );
  });

  it("turns INSERT OR REPLACE into an upsert on the table's primary key", () => {
    expect(pg('INSERT OR REPLACE INTO idempotency (team_id, key, status) VALUES (@team_id, @key, @status)')).to.equal(
      'INSERT INTO idempotency (team_id, key, status) VALUES ($1, $2, $3) ON CONFLICT (team_id, key) DO UPDATE SET status = excluded.status',
    );
    expect(() => pg('INSERT OR REPLACE INTO unknown (a) VALUES (?)')).to.throw(/no primary key known for unknown/);
  });

  it('qualifies the target column of an accumulating upsert (ambiguous in PostgreSQL)', () => {
    expect(pg('INSERT INTO c (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = n + excluded.n')).to.equal(
      'INSERT INTO c (k, n) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET n = c.n + excluded.n',
    );
  });

  it('reads JSON arrays with json_array_elements_text, types an optional filter, joins CROSS JOIN … ON plainly', () => {
    expect(pg('SELECT 1 FROM d WHERE domain IN (SELECT value FROM json_each(@skip))')).to.equal(
      'SELECT 1 FROM d WHERE domain IN (SELECT value FROM json_array_elements_text($1::json))',
    );
    expect(pg('SELECT 1 FROM t WHERE (? IS NULL OR a = ?)')).to.equal(
      'SELECT 1 FROM t WHERE ($1::text IS NULL OR a = $2)',
    );
    expect(pg('SELECT 1 FROM a CROSS JOIN d x ON x.id = a.id CROSS JOIN b')).to.equal(
      'SELECT 1 FROM a JOIN d x ON x.id = a.id CROSS JOIN b',
    );
    expect(pg('BEGIN IMMEDIATE')).to.equal('BEGIN');
  });
});
