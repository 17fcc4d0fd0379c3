// Opens the SQLite database (WAL), applies numbered migrations from ./migrations at start,
// and offers a transaction helper. Every multi-row change goes through `tx`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

export type DB = Database.Database;
const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

export function openDb(dataDir: string, opts: { synchronous?: 'NORMAL' | 'FULL' } = {}): DB {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // An existing folder keeps the mode it was made with: tighten it (owner-only), whatever the umask was.
  if ((fs.statSync(dataDir).mode & 0o077) !== 0) fs.chmodSync(dataDir, 0o700);
  const db = new Database(path.join(dataDir, 'mta.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${opts.synchronous ?? 'FULL'}`); // FULL: a 202 survives power loss (group commit keeps it cheap)
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
  return db;
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

/** Runs fn in an IMMEDIATE transaction (takes the write lock up front: no upgrade deadlocks). */
export function tx<T>(db: DB, fn: () => T): T {
  return db.transaction(fn).immediate();
}

const cache = new WeakMap<DB, Map<string, Database.Statement>>();
/** A prepared statement, compiled once per connection and reused. */
export function sql<R = unknown>(db: DB, text: string): Database.Statement<unknown[], R> {
  let m = cache.get(db);
  if (!m) cache.set(db, (m = new Map()));
  let s = m.get(text);
  if (!s) m.set(text, (s = db.prepare(text)));
  return s as Database.Statement<unknown[], R>;
}

interface Batch {
  waiters: { resolve: () => void; reject: (e: unknown) => void }[];
}
const batches = new WeakMap<DB, Batch>();

/**
 * Group commit: runs fn at once inside a savepoint of a shared IMMEDIATE transaction that is
 * committed once per event-loop turn; the promise settles after that COMMIT, so a caller that
 * answers only then answers durably, while many requests share one WAL write.
 * Writes by plain `tx` made while a batch is open join it (they become savepoints too).
 */
export function groupTx<T>(db: DB, fn: () => T): Promise<T> {
  let batch = batches.get(db);
  if (!batch) {
    if (db.inTransaction) return Promise.resolve().then(() => tx(db, fn));
    db.exec('BEGIN IMMEDIATE');
    const b: Batch = (batch = { waiters: [] });
    batches.set(db, b);
    setImmediate(() => flush(db, b));
  }
  let result: T;
  try {
    result = db.transaction(fn)();
  } catch (err) {
    return Promise.reject(err);
  }
  return new Promise<T>((resolve, reject) => batch!.waiters.push({ resolve: () => resolve(result), reject }));
}

function flush(db: DB, b: Batch): void {
  batches.delete(db);
  try {
    db.exec('COMMIT');
  } catch (err) {
    try {
      if (db.inTransaction) db.exec('ROLLBACK');
    } catch {
      /* already rolled back */
    }
    for (const w of b.waiters) w.reject(err);
    return;
  }
  for (const w of b.waiters) w.resolve();
}

/** The SQL texts prepared so far on a connection (for query-plan checks). */
export function preparedTexts(db: DB): string[] {
  return [...(cache.get(db)?.keys() ?? [])];
}
