// `mta backup FILE`: a consistent copy of the SQLite store while the service runs (SQLite's online backup API, page
// by page, restarted by SQLite when a write lands between two steps). The copy holds DKIM private keys and webhook
// secrets: its file is created owner-only (0600) before the first byte is written, and an existing file is never
// overwritten. PostgreSQL has its own tools (pg_dump).
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { isPg, type DB } from './db.js';

export class BackupRefused extends Error {}

/** Copies the store to `file` (which must not exist); answers its size in bytes. */
export async function backupStore(db: DB, file: string): Promise<{ file: string; bytes: number }> {
  if (isPg(db))
    throw new BackupRefused(
      'the store is PostgreSQL: back it up with pg_dump (for example pg_dump -Fc -f FILE DBNAME)',
    );
  const target = path.resolve(file);
  let fd: number;
  try {
    fd = fs.openSync(target, 'wx', 0o600); // O_EXCL: refuses a file that exists; owner-only from its creation
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new BackupRefused(`${target} exists: the backup never overwrites a file`);
    throw new BackupRefused(`cannot create ${target}: ${(err as Error).message}`);
  }
  try {
    fs.fchmodSync(fd, 0o600); // whatever the umask left
  } finally {
    fs.closeSync(fd);
  }
  try {
    await (db as Database.Database).backup(target);
  } catch (err) {
    for (const f of [target, `${target}-journal`]) fs.rmSync(f, { force: true });
    throw err;
  }
  return { file: target, bytes: fs.statSync(target).size };
}
