// Service-wide secrets and settings kept in the store (cursor and VERP HMAC keys…).
// A secret is generated once, on first use, and never logged.
import { randomBytes } from 'node:crypto';
import { sql, type DB } from './db.js';
import { get, run, type Gen } from './op.js';

export function* secret(db: DB, name: string): Gen<Buffer> {
  const row = yield* get(sql<{ value: string }>(db, 'SELECT value FROM settings WHERE key = ?'), `secret:${name}`);
  if (row) return Buffer.from(row.value, 'base64');
  const value = randomBytes(32).toString('base64');
  yield* run(sql(db, 'INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)'), `secret:${name}`, value);
  return yield* secret(db, name);
}
