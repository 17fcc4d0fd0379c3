// The PostgreSQL schema (src/store/migrations-pg) against the SQLite one (src/store/migrations): the same files, and
// after applying each in order (one transaction each) the same tables, columns (order, type, NOT NULL, default),
// primary and unique keys (partial ones too), foreign keys, CHECK lists, named indexes (columns, partial conditions)
// and triggers. Then the queue_counts triggers (migration 013): the same writes on deliveries run on both engines,
// and after each one PostgreSQL's counters equal a full GROUP BY recount and SQLite's counters; the backfill recounts
// them; a change of a delivery's key is refused. Skipped when no PostgreSQL is installed (apt-get install postgresql).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import pg from 'pg';
import { createDatabase, pgBinDir, sharedPg } from '../helpers/pg.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/store');
const SQLITE_DIR = path.join(root, 'migrations');
const PG_DIR = path.join(root, 'migrations-pg');
const migrations = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();

const WAITING = "('queued', 'sent', 'delivery_delayed')";
/** SQLite declared type -> the PostgreSQL type the translation rules give it. */
const TYPE: Record<string, string> = {
  INTEGER: 'bigint',
  TEXT: 'text',
  REAL: 'double precision',
  BLOB: 'bytea',
};

/** A default as both engines print it, reduced to its value: `'rsa'::text` and `'rsa'` -> rsa, `'-1'::integer` -> -1. */
const normDefault = (d: string | null) =>
  d === null
    ? null
    : d
        .replace(/::[a-z ]+$/, '')
        .replace(/^'(.*)'$/, '$1')
        .replace(/^\((.*)\)$/, '$1');

/** The quoted literals of a condition, sorted (`role IN ('next')` and `role = ANY (ARRAY['next'::text])` agree). */
const literals = (s: string) => [...s.matchAll(/'([^']*)'/g)].map((m) => m[1]).sort();

describe('PostgreSQL schema (migrations-pg) matches the SQLite one', function () {
  this.timeout(120_000);
  let client: pg.Client;
  let dbUrl: string;
  let lite: Database.Database;

  before(async function () {
    if (!pgBinDir() && !process.env.MTA_TEST_PG_URL) {
      console.log(
        '    (skipped: no PostgreSQL in /usr/lib/postgresql/*/bin; `apt-get install postgresql` to run these)',
      );
      this.skip();
    }
    const cluster = await sharedPg();
    // BIGINT (int8) as JS numbers on this connection only, as the engine layer reads them.
    const types = {
      getTypeParser: (oid: number, format?: any) =>
        oid === 20 ? (v: string) => Number(v) : (pg.types.getTypeParser as any)(oid, format),
    };
    dbUrl = await createDatabase(cluster.url);
    client = new pg.Client({ connectionString: dbUrl, types });
    await client.connect();
    lite = new Database(':memory:');
    lite.pragma('foreign_keys = ON');
    for (const f of migrations(SQLITE_DIR)) lite.exec(fs.readFileSync(path.join(SQLITE_DIR, f), 'utf8'));
    // Each PostgreSQL migration in its own transaction, in order, as the engine layer applies them.
    for (const f of migrations(PG_DIR)) {
      await client.query('BEGIN');
      try {
        await client.query(fs.readFileSync(path.join(PG_DIR, f), 'utf8'));
        await client.query('COMMIT');
      } catch (err: any) {
        await client.query('ROLLBACK');
        throw new Error(`migrations-pg/${f}: ${err.message}`, { cause: err });
      }
    }
  });
  after(async () => {
    await client?.end();
    lite?.close();
  });

  it('has a translation of every SQLite migration, same number and name', () => {
    expect(migrations(PG_DIR)).to.deep.equal(migrations(SQLITE_DIR));
  });

  const liteTables = () =>
    (
      lite
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .pluck()
        .all() as string[]
    ).sort();

  it('has the same tables and columns (order, type, NOT NULL, default)', async () => {
    const pgTables = (
      await client.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
      )
    ).rows
      .map((r) => r.table_name)
      // PostgreSQL only: per-transaction counter deltas, folded at COMMIT (migrations-pg/014, several nodes)
      .filter((t) => !t.endsWith('_delta'))
      .sort();
    expect(pgTables).to.deep.equal(liteTables());
    expect(pgTables.length).to.be.above(25);
    const cols = (
      await client.query(
        `SELECT table_name, column_name, data_type, is_nullable, column_default, is_identity
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
      )
    ).rows;
    const withRowid: string[] = [];
    for (const t of liteTables()) {
      const info = lite.prepare(`PRAGMA table_info(${t})`).all() as any[];
      // INTEGER PRIMARY KEY is SQLite's rowid: the engine picks it, as an identity column does.
      const pks = info.filter((c) => c.pk > 0);
      const rowid = pks.length === 1 && pks[0].type === 'INTEGER';
      const want = info.map((c) => ({
        column: c.name,
        type: TYPE[c.type] ?? `? ${c.type}`,
        notNull: c.notnull === 1 || c.pk > 0,
        default: normDefault(c.dflt_value),
        identity: rowid && c.pk > 0,
      }));
      // SQLite's implicit rowid, read by the store on two tables, is an explicit identity column there (001's header).
      const rowidCol = cols.find((c) => c.table_name === t && c.column_name === 'rowid');
      if (rowidCol) withRowid.push(`${t}:${rowidCol.data_type}:${rowidCol.is_identity}`);
      const got = cols
        .filter((c) => c.table_name === t && c.column_name !== 'rowid')
        .map((c) => ({
          column: c.column_name,
          type: c.data_type,
          notNull: c.is_nullable === 'NO',
          default: normDefault(c.column_default),
          identity: c.is_identity === 'YES',
        }));
      // email_messages.email_seq is the email's seq, always given by the store: a plain key, not an identity.
      if (t === 'email_messages') for (const c of want) c.identity = false;
      expect(got, t).to.deep.equal(want);
    }
    expect(withRowid).to.deep.equal(['credit_grants:bigint:YES', 'domains:bigint:YES']);
  });

  it('has the same primary, unique and foreign keys and CHECK lists', async () => {
    for (const t of liteTables()) {
      // Unique keys: column lists of every unique index (constraint or CREATE UNIQUE INDEX), `partial:` if it has WHERE.
      const liteKeys: string[] = [];
      for (const ix of lite.prepare(`PRAGMA index_list(${t})`).all() as any[]) {
        if (!ix.unique) continue;
        const ixCols = (lite.prepare(`PRAGMA index_info(${ix.name})`).all() as any[]).map((c) => c.name);
        liteKeys.push(`${ix.partial ? 'partial:' : ''}${ixCols.join(',')}`);
      }
      const info = lite.prepare(`PRAGMA table_info(${t})`).all() as any[];
      const pk = info
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name)
        .join(',');
      if (pk && !liteKeys.includes(pk)) liteKeys.push(pk); // a rowid key has no index of its own
      const pgKeys = (
        await client.query(
          `SELECT (CASE WHEN i.indpred IS NULL THEN '' ELSE 'partial:' END) ||
             (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) AS key
           FROM pg_index i WHERE i.indrelid = $1::regclass AND i.indisunique`,
          [t],
        )
      ).rows
        .map((r) => r.key)
        .filter((k) => k !== 'rowid'); // the explicit rowid of domains and credit_grants (001)
      expect(pgKeys.sort(), `${t} unique keys`).to.deep.equal(liteKeys.sort());

      const liteFks = (lite.prepare(`PRAGMA foreign_key_list(${t})`).all() as any[])
        .map((f) => `${f.from}->${f.table}.${f.to} ${f.on_delete}`)
        .sort();
      const pgFks = (
        await client.query(
          `SELECT a.attname || '->' || c.confrelid::regclass::text || '.' || fa.attname || ' ' ||
             (CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'a' THEN 'NO ACTION' ELSE c.confdeltype::text END) AS fk
           FROM pg_constraint c
           JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
           JOIN pg_attribute fa ON fa.attrelid = c.confrelid AND fa.attnum = c.confkey[1]
           WHERE c.conrelid = $1::regclass AND c.contype = 'f'`,
          [t],
        )
      ).rows
        .map((r) => r.fk)
        .sort();
      expect(pgFks, `${t} foreign keys`).to.deep.equal(liteFks);

      // CHECK (col IN ('a', 'b')) in the CREATE TABLE text (SQLite keeps ADD COLUMN's there too) vs PostgreSQL's.
      const createSql = lite.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?").pluck().get(t);
      const liteChecks = [...String(createSql).matchAll(/CHECK \((\w+) IN \(([^)]*)\)\)/g)]
        .map((m) => `${m[1]}:${literals(m[2]).join(',')}`)
        .sort();
      const pgChecks = (
        await client.query(
          "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c'",
          [t],
        )
      ).rows
        .map((r) => `${/CHECK \(\(?(\w+)/.exec(r.def)![1]}:${literals(r.def).join(',')}`)
        .sort();
      expect(pgChecks, `${t} checks`).to.deep.equal(liteChecks);
    }
  });

  it('has every named index, on the same table and columns, with the same uniqueness and partial condition', async () => {
    const liteIdx = lite
      .prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
      .all() as { name: string; tbl_name: string; sql: string }[];
    expect(liteIdx.length).to.be.above(30);
    const pgIdx = new Map(
      (
        await client.query("SELECT indexname, tablename, indexdef FROM pg_indexes WHERE schemaname = 'public'")
      ).rows.map((r) => [r.indexname, r]),
    );
    for (const ix of liteIdx) {
      const p = pgIdx.get(ix.name);
      expect(p, `index ${ix.name}`).to.not.equal(undefined);
      expect(p.tablename, ix.name).to.equal(ix.tbl_name);
      const liteCols = (lite.prepare(`PRAGMA index_info(${ix.name})`).all() as any[]).map((c) => c.name);
      const pgCols = /USING btree \(([^)]*)\)/
        .exec(p.indexdef)![1]
        .split(',')
        .map((c: string) => c.trim());
      expect(pgCols, ix.name).to.deep.equal(liteCols);
      expect(/^CREATE UNIQUE/.test(p.indexdef), `${ix.name} unique`).to.equal(/^CREATE UNIQUE/i.test(ix.sql));
      const liteWhere = /\bWHERE\b(.*)$/is.exec(ix.sql)?.[1] ?? '';
      const pgWhere = /\bWHERE\b(.*)$/is.exec(p.indexdef)?.[1] ?? '';
      expect(Boolean(pgWhere), `${ix.name} partial`).to.equal(Boolean(liteWhere));
      expect(literals(pgWhere), `${ix.name} condition`).to.deep.equal(literals(liteWhere));
      expect(/IS NOT NULL/i.test(pgWhere), `${ix.name} condition`).to.equal(/IS NOT NULL/i.test(liteWhere));
    }
  });

  it('has the same triggers, and the queue counters equal a full recount (and SQLite) after every write', async () => {
    const liteTriggers = lite
      .prepare("SELECT tbl_name || '.' || name FROM sqlite_master WHERE type = 'trigger' ORDER BY 1")
      .pluck()
      .all();
    const pgTriggers = (
      await client.query(
        "SELECT tgrelid::regclass::text || '.' || tgname AS t FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1",
      )
    ).rows
      .map((r) => r.t)
      .filter((t) => !/_delta\./.test(t)); // the COMMIT-time folds of PostgreSQL's counter deltas
    // PostgreSQL's three counter triggers on deliveries (a row trigger for deletes, statement triggers for inserts
    // and updates) do what SQLite's seven do (migrations-pg/017, 018, 019).
    const merged = /^deliveries\.queue_(counts|slots)_(insert|update|leave|delete)$/;
    const liteMerged = liteTriggers.filter((t) => merged.test(t as string));
    expect(liteMerged).to.have.length(7);
    const pgCounters = [
      'deliveries.deliveries_counts',
      'deliveries.deliveries_counts_insert',
      'deliveries.deliveries_counts_update',
    ];
    expect(pgTriggers).to.include.members(pgCounters);
    expect(pgTriggers.filter((t) => !pgCounters.includes(t))).to.deep.equal(
      liteTriggers.filter((t) => !merged.test(t as string)),
    );

    // The tables the triggers keep, read whole and in key order on both engines.
    const kept = liteTables().filter((t) => ['queue_counts', 'queue_slots'].includes(t));
    expect(kept).to.include('queue_counts');
    const readAll = (t: string) => {
      const n = (lite.prepare(`PRAGMA table_info(${t})`).all() as any[]).length;
      return `SELECT * FROM ${t} ORDER BY ${Array.from({ length: n }, (_, i) => i + 1).join(', ')}`;
    };
    const pgAll = async (t: string) => (await client.query(readAll(t))).rows;
    const RECOUNT: Record<string, string> = {
      queue_counts: `SELECT e.team_id, d.domain, e.sender_domain, count(*) AS recipients,
        count(*) FILTER (WHERE d.held_at IS NOT NULL) AS held,
        count(*) FILTER (WHERE d.held_at IS NULL AND d.attempts > 0) AS deferred
        FROM deliveries d JOIN emails e ON e.seq = d.email_seq WHERE d.status IN ${WAITING}
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      queue_slots: `SELECT slot, team_id, domain, sender_domain, attempted, count(*) AS recipients FROM (
        SELECT coalesce(d.next_attempt_at, 0) / 60000 AS slot, e.team_id, d.domain, e.sender_domain,
          (d.attempts > 0)::int AS attempted
        FROM deliveries d JOIN emails e ON e.seq = d.email_seq
        WHERE d.status IN ${WAITING} AND d.held_at IS NULL AND d.leased_until IS NULL) w
        GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`,
    };

    // One SQL text, run as is on both engines (literal values, no parameters), then every counter table compared.
    let step = 0;
    const both = async (label: string, text: string) => {
      step++;
      lite.exec(text);
      await client.query(text);
      for (const t of kept) {
        const rows = await pgAll(t);
        expect(rows, `${step} ${label}: ${t} on PostgreSQL vs SQLite`).to.deep.equal(lite.prepare(readAll(t)).all());
        if (RECOUNT[t])
          expect(rows, `${step} ${label}: ${t} vs a recount`).to.deep.equal((await client.query(RECOUNT[t])).rows);
        expect(
          rows.every((r) => r.recipients > 0),
          `${step} ${label}: ${t} keeps no empty row`,
        ).to.equal(true);
      }
    };
    for (const team of ['team_a', 'team_b'])
      await both('team', `INSERT INTO teams (id, name, created_at) VALUES ('${team}', '${team}', 1)`);
    const email = (seq: number, team: string, sender: string) =>
      `INSERT INTO emails (seq, id, team_id, test_mode, status, from_addr, to_json, subject, credits_charged,
        sender_domain, created_at, updated_at)
       VALUES (${seq}, 'em_${seq}', '${team}', 0, 'queued', 'a@${sender}', '[]', 's', 1, '${sender}', 1, 1)`;
    const delivery = (id: number, seq: number, domain: string, status = 'queued', more = 'NULL, 0, NULL, 1') =>
      `INSERT INTO deliveries (id, email_seq, recipient, kind, domain, status, held_at, attempts, leased_until,
        next_attempt_at, updated_at)
       VALUES (${id}, ${seq}, 'r${id}@${domain}', 'to', '${domain}', '${status}', ${more}, 1)`;
    await both(
      'emails',
      [email(1, 'team_a', 's1.test'), email(2, 'team_a', 's2.test'), email(3, 'team_b', 's1.test')].join(';'),
    );
    await both('queued rows', [1, 2, 3].map((i) => delivery(i, 1, i === 3 ? 'b.test' : 'a.test')).join(';'));
    await both('mixed rows', `${delivery(4, 2, 'a.test', 'sent')}; ${delivery(5, 3, 'a.test', 'delivery_delayed')}`);
    await both('final rows', `${delivery(6, 2, 'c.test', 'delivered')}; ${delivery(7, 3, 'c.test', 'bounced')}`);
    await both(
      'held, attempted, leased, scheduled on insert',
      [
        delivery(8, 3, 'b.test', 'queued', '5, 0, NULL, NULL'),
        delivery(9, 3, 'b.test', 'queued', 'NULL, 2, NULL, 120000'),
        delivery(10, 1, 'b.test', 'queued', 'NULL, 1, 99, 99'),
        delivery(11, 2, 'b.test', 'queued', 'NULL, 0, NULL, 3600000'),
      ].join(';'),
    );
    // One INSERT of several rows (the store merges a turn's INSERTs: src/store/pg/coalesce.ts): waiting and final,
    // held, attempted, leased and scheduled rows of two emails and three domains in one statement.
    const values = (d: string) => d.slice(d.indexOf('VALUES') + 'VALUES'.length);
    await both(
      'several rows in one INSERT',
      delivery(12, 1, 'a.test') +
        [
          delivery(13, 1, 'a.test', 'sent'),
          delivery(14, 3, 'b.test', 'queued', '5, 0, NULL, NULL'),
          delivery(15, 3, 'b.test', 'delivery_delayed', 'NULL, 2, NULL, 120000'),
          delivery(16, 2, 'c.test', 'queued', 'NULL, 1, 99, 99'),
          delivery(17, 2, 'c.test', 'delivered'),
          delivery(18, 1, 'a.test', 'queued', 'NULL, 0, NULL, 3600000'),
        ]
          .map((d) => `,${values(d)}`)
          .join(''),
    );
    await both('attempted', 'UPDATE deliveries SET attempts = attempts + 1 WHERE id IN (1, 2)');
    await both('attempted again (same counters)', 'UPDATE deliveries SET attempts = attempts + 1 WHERE id = 1');
    await both('claimed', 'UPDATE deliveries SET leased_until = 60000, next_attempt_at = 60000 WHERE id <= 5');
    await both(
      'deferred to a later minute',
      'UPDATE deliveries SET leased_until = NULL, next_attempt_at = 180000 WHERE id = 3',
    );
    await both('same minute', 'UPDATE deliveries SET next_attempt_at = 180001 WHERE id = 3');
    await both('same status', "UPDATE deliveries SET status = 'queued' WHERE id = 3");
    await both('waiting to waiting', "UPDATE deliveries SET status = 'delivery_delayed' WHERE id = 2");
    await both('hold a domain', "UPDATE deliveries SET held_at = 7, next_attempt_at = NULL WHERE domain = 'a.test'");
    await both('release one', 'UPDATE deliveries SET held_at = NULL, leased_until = NULL WHERE id = 2');
    await both('delivered', "UPDATE deliveries SET status = 'delivered', next_attempt_at = NULL WHERE id IN (1, 4)");
    await both('final to waiting', "UPDATE deliveries SET status = 'queued', attempts = 0 WHERE id = 6");
    await both('bounced while held', "UPDATE deliveries SET status = 'bounced' WHERE id = 5");
    await both('released and attempted at once', 'UPDATE deliveries SET held_at = NULL, attempts = 3 WHERE id = 8');
    await both('delete a final row', 'DELETE FROM deliveries WHERE id = 7');
    await both('delete waiting rows', 'DELETE FROM deliveries WHERE id IN (3, 9, 10)');
    await both(
      'purge a domain',
      "UPDATE deliveries SET status = 'failed', leased_until = NULL WHERE domain = 'a.test'",
    );
    // A seeded random walk over the same kinds of writes.
    let seed = 42;
    const rnd = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
    const statuses = ['queued', 'sent', 'delivery_delayed', 'delivered', 'bounced', 'failed'];
    const domains = ['a.test', 'b.test', 'c.test', 'd.test'];
    const times = ['NULL', '0', '59999', '60000', '120000', '7200000'];
    let nextId = 100;
    for (let i = 0; i < 200; i++) {
      const op = rnd(8);
      const id = 100 + rnd(Math.max(1, nextId - 100));
      const row = `${rnd(2) ? 'NULL' : 5}, ${rnd(3)}, ${rnd(3) ? 'NULL' : times[rnd(6)]}, ${times[rnd(6)]}`;
      if (op === 0 || nextId === 100)
        await both('random insert', delivery(nextId++, 1 + rnd(3), domains[rnd(4)], statuses[rnd(6)], row));
      else if (op === 1)
        await both('random status', `UPDATE deliveries SET status = '${statuses[rnd(6)]}' WHERE id = ${id}`);
      else if (op === 2)
        await both('random hold', `UPDATE deliveries SET held_at = ${rnd(2) ? 'NULL' : 6} WHERE id = ${id}`);
      else if (op === 3) await both('random attempt', `UPDATE deliveries SET attempts = ${rnd(3)} WHERE id = ${id}`);
      else if (op === 4)
        await both(
          'random claim',
          `UPDATE deliveries SET leased_until = ${times[rnd(6)]}, next_attempt_at = ${times[rnd(6)]} WHERE id = ${id}`,
        );
      else if (op === 5) await both('random delete', `DELETE FROM deliveries WHERE id = ${id}`);
      else if (op === 6)
        await both(
          'random reschedule',
          `UPDATE deliveries SET next_attempt_at = ${times[rnd(6)]} WHERE email_seq = ${1 + rnd(3)}`,
        );
      else
        await both(
          'random bulk',
          `UPDATE deliveries SET held_at = NULL, status = 'queued' WHERE domain = '${domains[rnd(4)]}'`,
        );
    }
    expect(step).to.be.above(200);
    expect((await pgAll('queue_counts')).length, 'counters left to recount').to.be.above(0);

    // The newest backfill of each counter table, run again over the same rows, writes what the triggers kept.
    for (const t of kept) {
      const backfill = (dir: string) =>
        migrations(dir)
          // `INSERT INTO t (…) SELECT …`: not a fold's `INSERT INTO t AS q … VALUES (r.…)` (migrations-pg/014, 017)
          .map((f) => new RegExp(`INSERT INTO ${t} \\([^;]+;`).exec(fs.readFileSync(path.join(dir, f), 'utf8'))?.[0])
          .filter(Boolean)
          .pop()!;
      const before = await pgAll(t);
      await client.query(`DELETE FROM ${t}; ${backfill(PG_DIR)}`);
      expect(await pgAll(t), `${t} backfill on PostgreSQL`).to.deep.equal(before);
      lite.exec(`DELETE FROM ${t}; ${backfill(SQLITE_DIR)}`);
      expect(lite.prepare(readAll(t)).all(), `${t} backfill on SQLite`).to.deep.equal(before);
    }

    // A delivery's and an email's key never change (the message of SQLite's RAISE(ABORT)); the same value is no change.
    const refused: [string, string][] = [
      ['deliveries', "domain = 'x.test'"],
      ['deliveries', 'email_seq = 2'],
      ...(liteTriggers.includes('emails.emails_key_fixed')
        ? ([
            ['emails', "team_id = 'team_b'"],
            ['emails', "sender_domain = 'x.test'"],
          ] as [string, string][])
        : []),
    ];
    for (const [t, set] of refused) {
      const where = t === 'deliveries' ? 'id = 2' : 'seq = 1';
      let failed: Error | undefined;
      await client.query(`UPDATE ${t} SET ${set} WHERE ${where}`).catch((e) => (failed = e));
      expect(failed?.message, set).to.match(/never change/);
      expect(() => lite.prepare(`UPDATE ${t} SET ${set} WHERE ${where}`).run(), set).to.throw(/never change/);
    }
    await client.query("UPDATE deliveries SET domain = 'a.test', email_seq = 1 WHERE id = 2");
    await client.query("UPDATE emails SET team_id = 'team_a', sender_domain = 's1.test' WHERE seq = 1");
  });

  it('folds the counter deltas at COMMIT by index, also after the empty delta tables were analyzed', async () => {
    // Between transactions the delta tables are empty, and that is what autovacuum measures: the planner then takes
    // a scan of the whole table for the cheapest way to a transaction's own rows, and kept that plan while the dead
    // rows of every transaction since the last vacuum piled up (300-420 µs a fold under the API bench instead of
    // ~40). counters_fold runs with sequential scans off (migrations-pg/020).
    const deltas = ['queue_counts_delta', 'queue_slots_delta', 'stats_hourly_delta', 'site_hourly_delta'];
    await client.query(`VACUUM ANALYZE ${deltas.join(', ')}`);
    const scans = async () => {
      await client.query('SELECT pg_stat_clear_snapshot()');
      const r = await client.query(
        'SELECT relname, seq_scan, n_tup_ins FROM pg_stat_user_tables WHERE relname = ANY($1) ORDER BY relname',
        [deltas],
      );
      return new Map(r.rows.map((x) => [x.relname as string, { seq: Number(x.seq_scan), ins: Number(x.n_tup_ins) }]));
    };
    // This session's own scans so far (the migrations' table rewrites and index builds) are counted now, not later.
    await client.query('SELECT pg_stat_force_next_flush()');
    const before = await scans();
    const s = new pg.Client({ connectionString: dbUrl }); // a new session: its plans are made after the ANALYZE
    await s.connect();
    for (let i = 0; i < 20; i++)
      await s.query(`BEGIN;
        INSERT INTO stats_hourly_delta (team_id, test_mode, hour, type, n) VALUES ('team_a', 0, ${i}, 'delivered', 1);
        UPDATE deliveries SET attempts = attempts + 1 WHERE id = (SELECT min(id) FROM deliveries);
        COMMIT`);
    await s.end(); // its statistics are flushed as it exits
    let after = await scans();
    for (let t = 0; t < 50 && after.get('stats_hourly_delta')!.ins < before.get('stats_hourly_delta')!.ins + 20; t++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await scans();
    }
    expect(after.get('stats_hourly_delta')!.ins - before.get('stats_hourly_delta')!.ins, 'rows folded').to.equal(20);
    for (const t of deltas) expect(after.get(t)!.seq - before.get(t)!.seq, `sequential scans of ${t}`).to.equal(0);
  });
});
