// Whether the store can write (decisions.md "When the store fails"): a write refused by SQLite for lack of room or an
// I/O fault (SQLITE_FULL on a full disk, SQLITE_IOERR, SQLITE_READONLY…) marks the store failing; /healthz then answers
// 503 with the reason, so a load balancer stops sending traffic. While it is failing, a health check tries a write of
// its own (at most once a second: one page of the database header through the WAL) and clears the mark once it
// succeeds, as does nothing else: the service keeps running either way.
import { isPg, type DB } from './db.js';

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
