// Work that must run on one node at a time when several share a PostgreSQL database (scheduled jobs):
// a session-level advisory lock named after the job (statements that exist only on PostgreSQL). SQLite has
// one process: always granted. A session lock belongs to a connection: taken and released on the same one
// (docs/async-store.md: the asynchronous driver holds a connection for the job).
import { isPg, sql, type DB } from './db.js';
import { get, type Gen } from './op.js';

/** Takes the lock `name` if no other node holds it; true when taken (release with unlockJob). */
export function* tryLockJob(db: DB, name: string): Gen<boolean> {
  if (!isPg(db)) return true;
  return (yield* get(sql<boolean>(db, 'SELECT pg_try_advisory_lock(hashtext(?))').pluck(), `mta:${name}`)) === true;
}

export function* unlockJob(db: DB, name: string): Gen<void> {
  if (isPg(db)) yield* get(sql(db, 'SELECT pg_advisory_unlock(hashtext(?))'), `mta:${name}`);
}
