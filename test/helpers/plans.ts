// EXPLAIN QUERY PLAN of a statement the store prepared, with every parameter (named @x or positional ?) bound
// to null: the plan's detail lines, for tests that assert hot queries use an index.
import type { DB } from '../../src/store/db.js';

export function planOf(db: DB, text: string): string[] {
  const named = [...new Set([...text.matchAll(/@(\w+)/g)].map((m) => m[1]))];
  const positional = (text.match(/\?/g) ?? []).length;
  const stmt = db.prepare(`EXPLAIN QUERY PLAN ${text}`);
  const rows = (
    named.length
      ? stmt.all(Object.fromEntries(named.map((n) => [n, null])))
      : stmt.all(...new Array(positional).fill(null))
  ) as { detail: string }[];
  return rows.map((r) => r.detail);
}

export const plan = (s: { db: DB }, text: string): string[] => planOf(s.db, text);
