// Copying a SQLite store into an empty PostgreSQL one (`mta migrate-to-postgres`, services/migrate-store.ts).
// The SQLite side is opened read-only; the PostgreSQL side is the store as openDb opens it (migrations applied).
// The copy is one PostgreSQL transaction: tables in foreign-key order (read from the PostgreSQL catalog), each
// in batches of one round trip (json_populate_recordset), every row as it is in SQLite, counter tables included:
// the user triggers of the copied tables (the ones that keep queue_counts, queue_slots… in step) are disabled for
// the copy, so the counters end exactly as SQLite's own triggers kept them, then the identity sequences are moved
// past the copied ids.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { isPg, type DB } from './db.js';
import type { PgDatabase } from './pg/database.js';

/** The SQLite store's file in the data folder (as openDb names it). */
const SQLITE_FILE = 'mta.sqlite';
/** A batch is also cut when its JSON grows past this (attachments and raw messages are BLOBs). */
const MAX_BATCH_CHARS = 8 * 1024 * 1024;
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export type SqliteSource = Database.Database;

/** Opens the SQLite store of a data folder read-only (no migration, no write); undefined when there is none. */
export function openSqliteReadOnly(dataDir: string): SqliteSource | undefined {
  const file = path.join(dataDir, SQLITE_FILE);
  if (!fs.existsSync(file)) return undefined;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  db.defaultSafeIntegers(true);
  return db;
}

/** The applied migration versions, ascending ([] when the store has none). */
export function sqliteMigrationVersions(src: SqliteSource): number[] {
  const has = src.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!has) return [];
  return (src.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as bigint[]).map(Number);
}

export function pgMigrationVersions(db: DB): number[] {
  return (pgOf(db).client.query('SELECT version FROM schema_migrations ORDER BY version').rows as { version: number }[])
    .map((r) => Number(r.version))
    .sort((a, b) => a - b);
}

function pgOf(db: DB): PgDatabase {
  if (!isPg(db)) throw new Error('the target of a copy must be a PostgreSQL store');
  return db;
}

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;

export interface PgTable {
  name: string;
  /** Insertable columns (not generated), in table order. */
  columns: string[];
  /** BYTEA columns: SQLite BLOBs go as '\x' + hex. */
  bytea: Set<string>;
  /** The identity column, if any (its sequence is moved past the copied ids). */
  identity: string | null;
  hasUserTriggers: boolean;
}

/** The tables of the PostgreSQL store but schema_migrations, parents before children (foreign keys). */
export function pgTablesInFkOrder(db: DB): PgTable[] {
  const client = pgOf(db).client;
  const tables = (
    client.query(
      `SELECT c.relname AS name,
         EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND NOT t.tgisinternal) AS triggers
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname <> 'schema_migrations'
         AND c.relname NOT LIKE '%\\_delta' -- PostgreSQL's per-transaction counter deltas (migrations-pg/014)
       ORDER BY c.relname`,
    ).rows as { name: string; triggers: boolean }[]
  ).map((t) => ({ ...t }));
  const cols = client.query(
    `SELECT table_name, column_name, data_type, is_identity, is_generated FROM information_schema.columns
     WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  ).rows as { table_name: string; column_name: string; data_type: string; is_identity: string; is_generated: string }[];
  const fks = client.query(
    `SELECT child.relname AS child, parent.relname AS parent
     FROM pg_constraint k
     JOIN pg_class child ON child.oid = k.conrelid
     JOIN pg_class parent ON parent.oid = k.confrelid
     JOIN pg_namespace n ON n.oid = k.connamespace
     WHERE k.contype = 'f' AND n.nspname = current_schema()`,
  ).rows as { child: string; parent: string }[];

  const byName = new Map<string, PgTable>(
    tables.map((t) => [
      t.name,
      { name: t.name, columns: [], bytea: new Set(), identity: null, hasUserTriggers: t.triggers },
    ]),
  );
  for (const c of cols) {
    const t = byName.get(c.table_name);
    if (!t || c.is_generated === 'ALWAYS') continue;
    t.columns.push(c.column_name);
    if (c.data_type === 'bytea') t.bytea.add(c.column_name);
    if (c.is_identity === 'YES') t.identity = c.column_name;
  }
  // Topological order: a table comes after every table it references (self-references don't constrain).
  const parents = new Map<string, Set<string>>([...byName.keys()].map((n) => [n, new Set<string>()]));
  for (const fk of fks) if (fk.child !== fk.parent && byName.has(fk.parent)) parents.get(fk.child)?.add(fk.parent);
  const order: PgTable[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, chain: string[]) => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new Error(`foreign-key cycle: ${[...chain, name].join(' → ')}`);
    state.set(name, 'visiting');
    for (const p of [...parents.get(name)!].sort()) visit(p, [...chain, name]);
    state.set(name, 'done');
    order.push(byName.get(name)!);
  };
  for (const name of [...byName.keys()].sort()) visit(name, []);
  return order;
}

/** The PostgreSQL tables that hold rows (schema_migrations aside), with a row count capped at 1 each. */
export function nonEmptyPgTables(db: DB, tables: PgTable[]): string[] {
  if (tables.length === 0) return [];
  const text = tables.map((t, i) => `SELECT ${i} AS i WHERE EXISTS (SELECT 1 FROM ${q(t.name)})`).join(' UNION ALL ');
  return (pgOf(db).client.query(text).rows as { i: number }[]).map((r) => tables[Number(r.i)].name);
}

/** SQLite's tables (but its own and schema_migrations) and their columns. */
export function sqliteTables(src: SqliteSource): Map<string, string[]> {
  const names = src
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> 'schema_migrations' ORDER BY name",
    )
    .pluck()
    .all() as string[];
  return new Map(
    names.map((n) => [
      n,
      (src.prepare(`PRAGMA table_xinfo(${q(n)})`).all() as { name: string; hidden: bigint }[])
        .filter((c) => Number(c.hidden) === 0)
        .map((c) => c.name),
    ]),
  );
}

/**
 * Where the two schemas differ in a way a copy cannot bridge: a SQLite table or column with no PostgreSQL
 * counterpart (its data would be lost), a PostgreSQL one with no SQLite source. `rowid` on the PostgreSQL side
 * stands for SQLite's implicit rowid. [] when they match.
 */
export function schemaDifferences(src: SqliteSource, tables: PgTable[]): string[] {
  const lite = sqliteTables(src);
  const out: string[] = [];
  const pgNames = new Set(tables.map((t) => t.name));
  for (const [name, cols] of lite) {
    if (!pgNames.has(name)) {
      out.push(`table ${name} is not in the PostgreSQL schema`);
      continue;
    }
    const pgCols = new Set(tables.find((t) => t.name === name)!.columns);
    for (const c of cols) if (!pgCols.has(c)) out.push(`column ${name}.${c} is not in the PostgreSQL schema`);
  }
  for (const t of tables) {
    const cols = lite.get(t.name);
    if (!cols) {
      out.push(`table ${t.name} is not in the SQLite store`);
      continue;
    }
    for (const c of t.columns)
      if (!cols.includes(c) && c !== 'rowid') out.push(`column ${t.name}.${c} is not in the SQLite store`);
  }
  return out;
}

function pgValue(v: unknown, bytea: boolean): unknown {
  if (typeof v === 'bigint') return v >= MIN_SAFE && v <= MAX_SAFE ? Number(v) : v.toString();
  if (Buffer.isBuffer(v)) return bytea ? '\\x' + v.toString('hex') : v.toString('utf8');
  if (typeof v === 'string' && bytea) return '\\x' + Buffer.from(v, 'utf8').toString('hex'); // text in a BLOB column
  return v;
}

export interface CopyProgress {
  table: string;
  rows: number;
}

/**
 * Copies every table of `tables` from SQLite into PostgreSQL in ONE transaction (all or nothing), batch rows
 * per round trip, with the copied tables' user triggers disabled (counter tables are copied as they are), then
 * moves every identity sequence past the largest copied id (and past SQLite's AUTOINCREMENT high-water mark).
 * `check` runs first inside the transaction, after the tables are locked (it may throw to refuse).
 */
export function copySqliteToPg(
  src: SqliteSource,
  db: DB,
  tables: PgTable[],
  opts: { batch: number; check?: () => void; onTable?: (p: CopyProgress) => void },
): CopyProgress[] {
  const pgdb = pgOf(db);
  const client = pgdb.client;
  const lite = sqliteTables(src);
  const autoinc = new Map<string, number>();
  if (src.prepare("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").get())
    for (const r of src.prepare('SELECT name, seq FROM sqlite_sequence').all() as { name: string; seq: bigint }[])
      autoinc.set(r.name, Number(r.seq));
  const done: CopyProgress[] = [];
  // A consistent snapshot of SQLite for the whole read (the service is meant to be stopped; this makes sure).
  src.exec('BEGIN');
  try {
    pgdb.transaction(() => {
      // ACCESS EXCLUSIVE on every table: nobody writes (or reads half a copy) until COMMIT.
      client.query("SET LOCAL lock_timeout = '10s'");
      try {
        client.query(`LOCK TABLE ${tables.map((t) => q(t.name)).join(', ')} IN ACCESS EXCLUSIVE MODE`);
      } catch (err) {
        if ((err as { code?: string }).code !== '55P03') throw err;
        throw new Error('the PostgreSQL tables are in use by another connection (a running service?): stop it first', {
          cause: err,
        });
      }
      client.query('SET LOCAL lock_timeout = 0');
      opts.check?.();
      for (const t of tables) if (t.hasUserTriggers) client.query(`ALTER TABLE ${q(t.name)} DISABLE TRIGGER USER`);
      for (const t of tables) {
        const rows = copyTable(src, client, t, lite.get(t.name) ?? [], opts.batch);
        const p = { table: t.name, rows };
        done.push(p);
        opts.onTable?.(p);
      }
      for (const t of tables) if (t.hasUserTriggers) client.query(`ALTER TABLE ${q(t.name)} ENABLE TRIGGER USER`);
      for (const t of tables) {
        if (!t.identity) continue;
        client.query(
          `SELECT setval(pg_get_serial_sequence($1, $2), GREATEST((SELECT max(${q(t.identity)}) FROM ${q(t.name)}), $3::bigint, 0) + 1, false)`,
          [q(t.name), t.identity, autoinc.get(t.name) ?? 0],
        );
      }
    })();
  } finally {
    src.exec('COMMIT');
  }
  return done;
}

function copyTable(
  src: SqliteSource,
  client: PgDatabase['client'],
  t: PgTable,
  liteCols: string[],
  batch: number,
): number {
  const cols = t.columns.filter((c) => liteCols.includes(c) || c === 'rowid');
  const select = cols.map((c) => (liteCols.includes(c) ? q(c) : `rowid AS ${q(c)}`)).join(', ');
  const list = cols.map(q).join(', ');
  const insert = `INSERT INTO ${q(t.name)} (${list}) SELECT ${list} FROM json_populate_recordset(NULL::${q(t.name)}, $1::json)`;
  const bytea = cols.map((c) => t.bytea.has(c));
  let rows = 0;
  let parts: string[] = [];
  let chars = 0;
  const flush = () => {
    if (parts.length === 0) return;
    try {
      client.query(insert, ['[' + parts.join(',') + ']']);
    } catch (err) {
      throw new Error(`copying ${t.name}: ${(err as Error).message}`, { cause: err });
    }
    rows += parts.length;
    parts = [];
    chars = 0;
  };
  const stmt = src.prepare(`SELECT ${select} FROM ${q(t.name)}`).raw(true);
  for (const r of stmt.iterate() as IterableIterator<unknown[]>) {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < cols.length; i++) o[cols[i]] = pgValue(r[i], bytea[i]);
    const json = JSON.stringify(o);
    parts.push(json);
    chars += json.length;
    if (parts.length >= batch || chars >= MAX_BATCH_CHARS) flush();
  }
  flush();
  return rows;
}
