// Runs every SQL text captured from the SQLite test run (test/helpers/sql-capture.ts) on PostgreSQL, after the engine
// layer's mechanical translation (src/store/pg/translate.ts), on a throwaway cluster holding migrations-pg: each with
// every parameter NULL, in a savepoint. Prints the texts that fail to parse or type-check (SQLSTATE classes 42 and 22),
// grouped by error; class 23 errors (a NULL in a NOT NULL column…) mean the statement ran far enough. Texts of several
// statements (test fixtures' exec), PRAGMA, transaction control, EXPLAIN and sqlite_master reads are left out.
//   MTA_SQL_CAPTURE_DIR=/tmp/sqlcap npx mocha --require test/helpers/sql-capture.ts 'test/**/*.test.ts'
//   npx tsx scripts/pg-sql-check.ts /tmp/sqlcap [--json out.json]
// The texts are SQLite's: a statement the store already gives a PostgreSQL text of its own (sql(db, sqlite, pg)) is
// listed too. Exit code 1 when some text fails. docs/postgres-notes.md lists what it found and how each is handled.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { createDatabase, pgBinDir, startPg } from '../test/helpers/pg.js';
import { translate } from '../src/store/pg/translate.js';

const [dir, ...rest] = process.argv.slice(2);
if (!dir || !fs.existsSync(dir)) {
  console.error('usage: npx tsx scripts/pg-sql-check.ts CAPTURE_DIR [--json out.json]');
  process.exit(2);
}
if (!pgBinDir()) {
  console.error('no PostgreSQL in /usr/lib/postgresql/*/bin (apt-get install postgresql)');
  process.exit(2);
}
const jsonOut = rest[0] === '--json' ? rest[1] : undefined;

const texts = new Set<string>();
for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json')))
  for (const t of JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as string[]) texts.add(t);

const skip = (t: string) =>
  /;\s*\S/.test(t.replace(/;\s*$/, '')) ||
  /^\s*(--|PRAGMA|SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT|END|EXPLAIN|CREATE TABLE IF NOT EXISTS schema_migrations)/i.test(
    t,
  ) ||
  /sqlite_master|pragma_/i.test(t);

const MIGRATIONS = path.join(path.dirname(new URL(import.meta.url).pathname), '../src/store/migrations-pg');
const cluster = await startPg();
const failures: { text: string; pg: string; error: string; code: string }[] = [];
let ran = 0;
let skipped = 0;
try {
  const client = new pg.Client({ connectionString: await createDatabase(cluster.url) });
  await client.connect();
  for (const f of fs.readdirSync(MIGRATIONS).sort())
    if (/^\d+_.*\.sql$/.test(f)) await client.query(fs.readFileSync(path.join(MIGRATIONS, f), 'utf8'));
  await client.query(
    'CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
  );
  const primaryKeys = new Map<string, string[]>();
  const pkRows = await client.query(
    `SELECT c.relname AS t, array_agg(a.attname::text ORDER BY k.n) AS cols
     FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
     CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n)
     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
     WHERE i.indisprimary AND c.relnamespace = 'public'::regnamespace GROUP BY 1`,
  );
  for (const r of pkRows.rows) primaryKeys.set(r.t, r.cols);
  await client.query('BEGIN');
  for (const text of [...texts].sort()) {
    if (skip(text)) {
      skipped++;
      continue;
    }
    let out: string;
    try {
      out = translate(text, { primaryKeys }).text;
    } catch (err) {
      failures.push({ text, pg: '', error: `translate: ${(err as Error).message}`, code: '' });
      continue;
    }
    const n = Math.max(0, ...[...out.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    await client.query('SAVEPOINT s');
    try {
      await client.query(out, Array(n).fill(null));
      ran++;
    } catch (err) {
      const e = err as { code?: string; message: string };
      if (/^(42|22)/.test(String(e.code))) failures.push({ text, pg: out, error: e.message, code: String(e.code) });
      else ran++;
    }
    await client.query('ROLLBACK TO SAVEPOINT s');
  }
  await client.query('ROLLBACK');
  await client.end();
} finally {
  await cluster.stop();
}

const byError = new Map<string, string[]>();
for (const f of failures) byError.set(f.error, [...(byError.get(f.error) ?? []), f.text]);
for (const [error, list] of [...byError].sort((a, b) => b[1].length - a[1].length)) {
  console.log(`${list.length} × ${error}`);
  for (const t of list.slice(0, 3)) console.log(`    ${t.replace(/\s+/g, ' ').slice(0, 200)}`);
}
console.log(`${texts.size} texts: ${ran} ran on PostgreSQL, ${failures.length} failed, ${skipped} left out`);
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(failures, null, 1));
process.exitCode = failures.length ? 1 : 0;
