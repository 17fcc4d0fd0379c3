// Work that must run on one node at a time when several share a PostgreSQL database (scheduled jobs):
// a session-level advisory lock named after the job (statements that exist only on PostgreSQL). SQLite has
// one process: always granted.
import { isPg, sql, type DB } from './db.js';

/** Takes the lock `name` if no other node holds it; true when taken (release with unlockJob). */
export function tryLockJob(db: DB, name: string): boolean {
  if (!isPg(db)) return true;
  return sql<boolean>(db, 'SELECT pg_try_advisory_lock(hashtext(?))').pluck().get(`mta:${name}`) === true;
}

export function unlockJob(db: DB, name: string): void {
  if (isPg(db)) sql(db, 'SELECT pg_advisory_unlock(hashtext(?))').get(`mta:${name}`);
}
