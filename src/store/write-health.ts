// Whether the store can write (decisions.md "When the store fails"): a write refused by SQLite for lack of room or an
// I/O fault (SQLITE_FULL on a full disk, SQLITE_IOERR, SQLITE_READONLY…) marks the store failing; /healthz then answers
// 503 with the reason, so a load balancer stops sending traffic. While it is failing, a health check tries a write of
// its own (at most once a second: one page of the database header through the WAL) and clears the mark once it
// succeeds, as does nothing else: the service keeps running either way.
// PostgreSQL's counterpart is a lost connection (./pg/sync-client.ts reconnects with back-off): unreachable() says
// why while it lasts, trying a new connection when the back-off allows.
import { isPg, sql, type DB } from './db.js';
import { get, type Gen } from './op.js';
import { isConnectionLoss } from './pg/sync-client.js';

/** Error codes of SQLite that say the store cannot write (not a constraint or a bug of the statement). */
const CANNOT_WRITE = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB|PROTOCOL)/;
const PROBE_EVERY_MS = 1000;

interface State {
  failing: string | null;
  probedAt: number;
}
const states = new WeakMap<DB, State>();
const stateOf = (db: DB): State => {
  let s = states.get(db);
  if (!s) states.set(db, (s = { failing: null, probedAt: 0 }));
  return s;
};

/**
 * Whether an error says the store is unavailable rather than the statement wrong: a write SQLite cannot make (a full
 * disk, an I/O fault) or a lost PostgreSQL connection. The API answers 503 store_unavailable, SMTP 451 4.3.0.
 */
export function isStoreUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return (typeof code === 'string' && CANNOT_WRITE.test(code)) || isConnectionLoss(err);
}

/**
 * PostgreSQL: null while connected, otherwise why the database cannot be reached. Once the back-off allows, a
 * `SELECT 1` tries a new connection (not inside a transaction of the delivery loop or a group-commit turn).
 */
export function unreachable(db: DB): string | null {
  if (!isPg(db) || db.client.unreachable === null) return null;
  if (!db.inTransaction) {
    try {
      db.client.query('SELECT 1');
    } catch {
      /* still down: the reason below */
    }
  }
  return db.client.unreachable;
}

/** A statement that only asks the database to answer (/healthz on the pool: services/store-health.ts). */
export const ping = (db: DB): Gen<unknown> => get(sql(db, 'SELECT 1 AS ok'));

/** Notes an error a write met: true when it says the store cannot write (the store is then marked failing). */
export function noteWriteError(db: DB, err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (isPg(db) || typeof code !== 'string' || !CANNOT_WRITE.test(code)) return false;
  stateOf(db).failing = `${code}: ${(err as Error).message}`;
  return true;
}

/** null: the store writes. Otherwise why it cannot (probed again at most once a second while failing). */
export function writeFailure(db: DB, now: number): string | null {
  const s = states.get(db);
  if (!s?.failing) return null;
  if (now - s.probedAt < PROBE_EVERY_MS) return s.failing;
  s.probedAt = now;
  try {
    const v = db.pragma('user_version', { simple: true }) as number;
    db.pragma(`user_version = ${v}`); // rewrites the header page: a committed write through the WAL
    s.failing = null;
  } catch (err) {
    if (!noteWriteError(db, err)) s.failing = `${(err as Error).message}`;
  }
  return s.failing;
}
