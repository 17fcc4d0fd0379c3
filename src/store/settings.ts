// Service-wide secrets and settings kept in the store (cursor and VERP HMAC keys…).
// A secret is generated once, on first use, and never logged.
import { randomBytes } from 'node:crypto';
import { sql, type DB } from './db.js';

export function secret(db: DB, name: string): Buffer {
  const row = sql<{ value: string }>(db, 'SELECT value FROM settings WHERE key = ?').get(`secret:${name}`);
  if (row) return Buffer.from(row.value, 'base64');
  const value = randomBytes(32).toString('base64');
  sql(db, 'INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)').run(`secret:${name}`, value);
  return secret(db, name);
}
