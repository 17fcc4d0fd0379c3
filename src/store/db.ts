// Opens the store: SQLite (WAL, better-sqlite3) in the data folder by default, PostgreSQL when a database
// URL is given (./pg: the same synchronous API over a worker-thread connection). Applies the engine's numbered
// migrations at start (./migrations, ./migrations-pg) and offers the transaction helpers. Every multi-row
// change goes through `tx`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { PgDatabase, PgStatement } from './pg/database.js';
export { PLAN_EACH_TIME } from './pg/database.js';
import { REPLAY } from './pg/sync-client.js';

/** A prepared statement: better-sqlite3's, or the PostgreSQL engine's with the same methods. */
export interface Stmt<R = unknown> {
  run(...args: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...args: unknown[]): R | undefined;
  all(...args: unknown[]): R[];
  pluck(on?: boolean): this;
}
/** The store's connection on either engine (better-sqlite3's Database has exactly this shape). */
export interface DB {
  readonly inTransaction: boolean;
  prepare(text: string): Stmt<unknown>;
  exec(text: string): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  transaction<F extends (...params: any[]) => unknown>(fn: F): Database.Transaction<F>;
  pragma(text: string, opts?: { simple?: boolean }): unknown;
  close(): unknown;
}
export const isPg = (db: DB): db is DB & PgDatabase => db instanceof PgDatabase;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MIGRATIONS = path.join(HERE, 'migrations');
const MIGRATIONS_PG = path.join(HERE, 'migrations-pg');

export interface OpenOptions {
  synchronous?: 'NORMAL' | 'FULL';
  /** postgres://… : the store lives in PostgreSQL (MTA_DATABASE_URL); unset: SQLite in the data folder. */
  databaseUrl?: string;
  /** false: open only a store that exists (the `mta` commands but serve): none is NoStoreError, nothing created. */
  create?: boolean;
}

/** openDb with `create: false` found no store where the settings point (`where`: the folder, or the URL sans password). */
export class NoStoreError extends Error {
  constructor(readonly where: string) {
    super(`no store at ${where}`);
  }
}

/**
 * Makes the data folder (0700) and its missing parents one level at a time: Node's recursive mkdir loops for ever
 * under a folder that refuses mkdir with ENOENT (/proc). A failure names the setting and the reason.
 */
function makeDataDir(dataDir: string): void {
  const missing: string[] = [];
  for (let d = path.resolve(dataDir); !fs.existsSync(d); d = path.dirname(d)) {
    missing.unshift(d);
    if (path.dirname(d) === d) break;
  }
  for (const d of missing) {
    try {
      fs.mkdirSync(d, { mode: 0o700 });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EEXIST' && fs.statSync(d).isDirectory()) continue;
      throw new Error(
        `invalid configuration: MTA_DATA_DIR (dataDir): a folder this user can create and write; cannot create ${d} (${e.code ?? e.message})`,
        { cause: err },
      );
    }
  }
  if (!fs.statSync(dataDir).isDirectory())
    throw new Error(`invalid configuration: MTA_DATA_DIR (dataDir): a folder; ${path.resolve(dataDir)} is a file`);
}

export function openDb(dataDir: string, opts: OpenOptions = {}): DB {
  if (opts.databaseUrl) return openPg(opts.databaseUrl, opts.create ?? true);
  if (opts.create === false && !fs.existsSync(path.join(dataDir, 'mta.sqlite')))
    throw new NoStoreError(path.resolve(dataDir));
  makeDataDir(dataDir);
  // An existing folder keeps the mode it was made with: tighten it (owner-only), whatever the umask was.
  if ((fs.statSync(dataDir).mode & 0o077) !== 0) fs.chmodSync(dataDir, 0o700);
  const db = new Database(path.join(dataDir, 'mta.sqlite'));
  db.pragma('journal_mode = WAL');
  setSynchronous(db, opts.synchronous ?? 'FULL'); // FULL: a 202 survives power loss (group commit keeps it cheap)
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma('cache_size = -16384');
  db.pragma('temp_store = MEMORY');
  // The store holds DKIM private keys and webhook secrets: owner-only, whatever the umask.
  for (const f of ['mta.sqlite', 'mta.sqlite-wal', 'mta.sqlite-shm']) {
    try {
      fs.chmodSync(path.join(dataDir, f), 0o600);
    } catch {
      /* not created yet */
    }
  }
  migrate(db);
  if ((opts.synchronous ?? 'FULL') === 'FULL') syncLater(db, path.join(dataDir, 'mta.sqlite-wal'));
  return db;
}

/**
 * Group commit on SQLite with synchronous=FULL: the turn's COMMIT is written with synchronous=NORMAL (no fsync on
 * the event loop) and the WAL file is then flushed with fdatasync on libuv's pool; the turn's requests are answered
 * after that flush. Durability is FULL's (every frame of the commit, the commit frame included, is on disk before
 * the 202); only the wait moves off the event loop. A checkpoint that copies the frames into the database file
 * first syncs both files itself. The WAL file lives as long as this connection (SQLite removes it when the last
 * connection closes), so one descriptor, opened at the first flush and closed with the connection, is enough.
 */
export interface WalSync {
  file: string;
  fd: number | null;
}
const walSyncs = new WeakMap<DB, WalSync>();
export const walSyncOf = (db: DB): WalSync | undefined => walSyncs.get(db);
function syncLater(db: Database.Database, file: string): void {
  const w: WalSync = { file, fd: null };
  walSyncs.set(db, w);
  const close = db.close.bind(db);
  db.close = () => {
    if (w.fd !== null) fs.closeSync(w.fd);
    w.fd = null;
    walSyncs.delete(db);
    return close();
  };
}
export function flushWal(w: WalSync, done: (err: Error | null) => void): void {
  try {
    w.fd ??= fs.openSync(w.file, 'r+');
  } catch (err) {
    return done(err as Error);
  }
  fs.fdatasync(w.fd, done);
}

/** Opens PostgreSQL and applies its migrations; several nodes starting at once take turns (advisory lock). */
export function openPg(url: string, create = true): DB {
  const db = new PgDatabase(url);
  try {
    if (!create && sql(db, "SELECT to_regclass('schema_migrations') AS t").pluck().get() === null)
      throw new NoStoreError(url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1@')); // never print the password
    db.exec('SELECT pg_advisory_lock(72100001)');
    try {
      migratePg(db);
    } finally {
      db.exec('SELECT pg_advisory_unlock(72100001)');
    }
    db.loadCatalog();
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

function pendingMigrations(db: DB, dir: string): { version: number; file: string; sql: string }[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
  );
  const done = new Set((db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]).map(Number));
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort()
    .map((file) => ({ version: parseInt(file, 10), file, sql: '' }))
    .filter((m) => !done.has(m.version))
    .map((m) => ({ ...m, sql: fs.readFileSync(path.join(dir, m.file), 'utf8') }));
}

function migratePg(db: PgDatabase): void {
  for (const m of pendingMigrations(db, MIGRATIONS_PG)) {
    db.transaction(() => {
      db.client.query(m.sql);
      db.client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        m.version,
        m.file,
        Date.now(),
      ]);
    })();
  }
}

export function migrate(db: DB): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
  );
  const done = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
  const files = fs
    .readdirSync(MIGRATIONS)
    .filter((f) => /^\d+_.*\.sql$/.test(f))
    .sort();
  for (const file of files) {
    const version = parseInt(file, 10);
    if (done.has(version)) continue;
    const sql = fs.readFileSync(path.join(MIGRATIONS, file), 'utf8');
    db.transaction(() => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        version,
        file,
        Date.now(),
      );
    }).immediate();
  }
}

/**
 * PostgreSQL refused a transaction because of another one (deadlock, serialization): several nodes wrote the same
 * rows in opposite orders. Running it again is safe. Never on SQLite (writes are serialized).
 */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === '40P01' || code === '40001' || code === REPLAY;
}
export const RETRIES = 5;

/**
 * fn in a transaction (`immediate`: BEGIN IMMEDIATE), or in a savepoint inside an open one: better-sqlite3's
 * transaction() semantics, without the four wrapper functions it builds on every call (~6 µs a request on the
 * group-commit path). SQLite's statements are prepared once per connection; PostgreSQL keeps its own transaction().
 */
export function atomically<T>(db: DB, fn: () => T, immediate = false): T {
  if (isPg(db)) {
    const t = db.transaction(fn);
    return immediate ? t.immediate() : t();
  }
  const nested = db.inTransaction;
  sql(db, nested ? 'SAVEPOINT mta_tx' : immediate ? 'BEGIN IMMEDIATE' : 'BEGIN').run();
  if (!nested) newTxEpoch(db);
  try {
    const result = fn();
    sql(db, nested ? 'RELEASE mta_tx' : 'COMMIT').run();
    return result;
  } catch (err) {
    newTxEpoch(db); // what was kept of this transaction's writes may have been rolled back
    if (db.inTransaction) {
      if (nested) {
        sql(db, 'ROLLBACK TO mta_tx').run();
        sql(db, 'RELEASE mta_tx').run();
      } else sql(db, 'ROLLBACK').run();
    }
    throw err;
  }
}

const syncLevels = new WeakMap<DB, 'NORMAL' | 'FULL'>();
/**
 * SQLite: PRAGMA synchronous set, and remembered (a pragma acts when it is compiled, so db.pragma() prepares it each
 * time: reading it back before each result batch's transaction was one more prepare). Every change goes through here.
 */
export function setSynchronous(db: DB, level: 'NORMAL' | 'FULL'): void {
  db.pragma(`synchronous = ${level}`);
  syncLevels.set(db, level);
}
/** The level setSynchronous last set (undefined: never set through it, as on PostgreSQL). */
export const synchronousOf = (db: DB): 'NORMAL' | 'FULL' | undefined => syncLevels.get(db);

const epochs = new WeakMap<DB, number>();
/**
 * SQLite: a number that changes whenever a transaction begins and whenever one (or a savepoint of it) is rolled back:
 * what a transaction keeps in memory of its own writes (store/credits.ts: a team's balance after its charges) holds
 * while the epoch it was kept in is the current one and the transaction is still open. Every BEGIN of the service's
 * writes goes through atomically or the group-commit turn (./group-commit.ts openBatch), which call newTxEpoch.
 */
export const txEpoch = (db: DB): number => epochs.get(db) ?? 0;
export const newTxEpoch = (db: DB): void => void epochs.set(db, txEpoch(db) + 1);

/**
 * Runs fn in an IMMEDIATE transaction (takes the write lock up front: no upgrade deadlocks). On PostgreSQL a
 * top-level transaction refused by a deadlock with another node is run again (fn must only touch the store).
 */
export function tx<T>(db: DB, fn: () => T): T {
  if (isPg(db)) db.leavingTurn?.(); // ./group-commit.ts leaveTurn
  for (let attempt = 1; ; attempt++) {
    try {
      return atomically(db, fn, true);
    } catch (err) {
      if (db.inTransaction || !isRetryable(err) || attempt >= RETRIES) throw err;
    }
  }
}

const cache = new WeakMap<DB, Map<string, Stmt>>();
/**
 * A prepared statement, compiled once per connection and reused. `pg`: the PostgreSQL text where the
 * mechanical translation of `text` (src/store/pg/translate.ts) isn't right; it takes the same parameters.
 */
export function sql<R = unknown>(db: DB, text: string, pg?: string): Stmt<R> {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  let s = m.get(text);
  if (!s) m.set(text, (s = db.prepare(pg && isPg(db) ? pg : text)));
  return s as Stmt<R>;
}

/** SQLite: a number that changes when another connection commits to the file (PRAGMA data_version). */
export const dataVersion = (db: DB): number => sql<number>(db, 'PRAGMA data_version').pluck().get()!;

/** Integers as a PostgreSQL array literal, for a `?::bigint[]` parameter (`= ANY(…)`, `unnest(…)`). */
export const pgArray = (ns: readonly number[]): string => `{${ns.join(',')}}`;

/**
 * The row `s.get(...args)` answers, read later: on PostgreSQL inside a transaction the read travels with the next
 * statement that needs an answer (two reads, one round trip); SQLite reads now. Call the function for the row.
 */
export function getLater<R>(s: Stmt<R>, ...args: unknown[]): () => R | undefined {
  if (s instanceof PgStatement) return (s as PgStatement<R>).getLater(...args);
  const row = s.get(...args);
  return () => row;
}
/**
 * A write whose outcome nobody reads (no `changes`, no `lastInsertRowid`): on PostgreSQL inside a transaction it is
 * deferred like run(), and marked so, which lets several `INSERT … ON CONFLICT DO NOTHING` of one statement go out
 * as one (their separate row counts would be lost: ./pg/coalesce.ts). SQLite: run().
 */
export function fire(s: Stmt, ...args: unknown[]): void {
  if (s instanceof PgStatement) s.fire(...args);
  else s.run(...args);
}
/** getLater for all the rows. */
export function allLater<R>(s: Stmt<R>, ...args: unknown[]): () => R[] {
  if (s instanceof PgStatement) return (s as PgStatement<R>).allLater(...args);
  const rows = s.all(...args);
  return () => rows;
}

/**
 * What an operator should fix about the store's setup (logged at start). PostgreSQL: a database whose text
 * collation is not C orders text unlike SQLite (byte order), e.g. names with dots or dashes.
 */
export function storeWarnings(db: DB): string[] {
  if (!isPg(db)) return [];
  const c = sql<string>(db, 'SELECT datcollate FROM pg_database WHERE datname = current_database()').pluck().get();
  return c === 'C' || c === 'POSIX' || c === 'C.UTF-8' || c === 'C.utf8'
    ? []
    : [
        `the database's collation is ${c}: text sorts unlike SQLite's byte order; create the database with LC_COLLATE 'C' (docs/operations.md)`,
      ];
}

/** PostgreSQL: statements sent, round trips to the connection's thread, seconds the main thread waited. */
export function storeCounters(db: DB): { statements: number; roundTrips: number; waitSeconds: number } | null {
  if (!isPg(db)) return null;
  const c = db.client;
  return { statements: c.queries, roundTrips: c.roundTrips, waitSeconds: Number(c.waitedNs) / 1e9 };
}

const memos = new WeakMap<object, { serial: number; values: Map<string, unknown> }>();
/** Whose transaction a plan's step runs in: a connection of the pool (PgDatabase.scope) or the synchronous one. */
const memoOwner = (db: DB & PgDatabase): { txSerial: number } => db.scope ?? db;
/**
 * PostgreSQL, inside a transaction: `read()` runs once per top-level transaction and key, later calls answer from
 * memory (a round trip saved per call; a group-commit turn is one transaction). Writers of what was read call
 * forgetMemo. SQLite, or outside a transaction: `read()` every time.
 */
export function txMemo<T>(db: DB, key: string, read: () => T): T {
  const kept = txMemoed<T>(db, key);
  return kept ? kept.value : txRemember(db, key, read());
}
/** What txMemo remembers under `key` in this transaction, if anything (a plan's form of txMemo, with txRemember). */
export function txMemoed<T>(db: DB, key: string): { value: T } | undefined {
  if (!isPg(db) || !db.inTransaction) return undefined;
  const owner = memoOwner(db);
  const m = memos.get(owner);
  return m && m.serial === owner.txSerial && m.values.has(key) ? { value: m.values.get(key) as T } : undefined;
}
/** Remembers `value` under `key` for the rest of this transaction (PostgreSQL; a no-op outside one); returns it. */
export function txRemember<T>(db: DB, key: string, value: T): T {
  if (!isPg(db) || !db.inTransaction) return value;
  const owner = memoOwner(db);
  let m = memos.get(owner);
  if (!m || m.serial !== owner.txSerial) memos.set(owner, (m = { serial: owner.txSerial, values: new Map() }));
  m.values.set(key, value);
  return value;
}
/** Drops what txMemo remembers under keys starting with `prefix` (the rows behind them are being written). */
export function forgetMemo(db: DB, prefix: string): void {
  const m = memos.get(isPg(db) ? memoOwner(db) : db);
  if (m) for (const k of [...m.values.keys()]) if (k.startsWith(prefix)) m.values.delete(k);
}

/**
 * fn now and, inside a transaction a plan opened on the pool (runPlan, runLocking), once more after its COMMIT: for a
 * cache's stamp a write bumps (domains, webhook endpoints), so that a read made on another connection between the
 * write and its COMMIT (it saw the rows as they were) is not remembered under the stamp the write left.
 */
export function nowAndAfterCommit(db: DB, fn: () => void): void {
  fn();
  if (isPg(db)) db.scope?.whenCommitted?.(fn);
}

/** A unique or primary-key constraint refused the write (either engine). */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** The SQL texts prepared so far on a connection (for query-plan checks). */
export function preparedTexts(db: DB): string[] {
  return [...(cache.get(db)?.keys() ?? [])];
}
