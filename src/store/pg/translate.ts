// Turns the store's SQL (written for SQLite) into PostgreSQL text, mechanically: parameters (`?`, `@name`)
// become $n, `INSERT OR IGNORE` becomes `ON CONFLICT DO NOTHING`, `INSERT OR REPLACE` an upsert on the
// table's primary key, `json_each(x)` json_array_elements_text. Anything subtler is written per engine
// in the store itself (sql(db, sqlite, pg)). Pure: no I/O.

export interface Translated {
  text: string;
  /** For named parameters: the name bound to each $n, in order; null when the statement uses `?`. */
  names: string[] | null;
  /** INSERT statements: the table written (for lastInsertRowid). */
  insertInto: string | null;
}

export interface Catalog {
  /** Primary-key columns of each table (for INSERT OR REPLACE). */
  primaryKeys: Map<string, string[]>;
}

/** Rewrites parameters outside string literals and quoted identifiers. */
function rewriteParams(sql: string): { text: string; names: string[] | null } {
  let out = '';
  let n = 0;
  const names: string[] = [];
  const index = new Map<string, number>();
  let named = false;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const stop = end < 0 ? sql.length : end;
      out += sql.slice(i, stop + 1);
      i = stop;
    } else if (c === '?') {
      out += `$${++n}`;
    } else if (c === '@' && /[A-Za-z_]/.test(sql[i + 1] ?? '')) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i + 1))!;
      named = true;
      let k = index.get(m[0]);
      if (k === undefined) {
        names.push(m[0]);
        index.set(m[0], (k = names.length));
      }
      out += `$${k}`;
      i += m[0].length;
    } else {
      out += c;
    }
  }
  return { text: out, names: named ? names : null };
}

function insertOr(text: string, catalog: Catalog): string {
  const m = /^\s*INSERT\s+OR\s+(IGNORE|REPLACE)\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)/i.exec(text);
  if (!m) return text;
  const [, how, table, colList] = m;
  let rest = text.replace(/^\s*INSERT\s+OR\s+(IGNORE|REPLACE)\s+INTO/i, 'INSERT INTO');
  let clause = ' ON CONFLICT DO NOTHING';
  if (how.toUpperCase() === 'REPLACE') {
    const pk = catalog.primaryKeys.get(table);
    if (!pk) throw new Error(`INSERT OR REPLACE: no primary key known for ${table}`);
    const cols = colList.split(',').map((c) => c.trim());
    const set = cols.filter((c) => !pk.includes(c)).map((c) => `${c} = excluded.${c}`);
    clause = ` ON CONFLICT (${pk.join(', ')}) DO ${set.length ? `UPDATE SET ${set.join(', ')}` : 'NOTHING'}`;
  }
  const ret = /\sRETURNING\s/i.exec(rest);
  rest = ret ? rest.slice(0, ret.index) + clause + rest.slice(ret.index) : rest.replace(/\s*;?\s*$/, '') + clause;
  return rest;
}

/** `SET n = n + excluded.n` is ambiguous in PostgreSQL's ON CONFLICT: qualify the target table's column. */
function qualifyUpsert(text: string): string {
  const m = /^\s*INSERT\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)/i.exec(text);
  if (!m || !/ON CONFLICT/i.test(text)) return text;
  const table = m[1];
  return text.replace(
    /(\bSET\s+|,\s*)([A-Za-z_][A-Za-z0-9_]*)\s*=\s*\2\s*([+-])\s*excluded\./g,
    (_all, lead: string, col: string, op: string) => `${lead}${col} = ${table}.${col} ${op} excluded.`,
  );
}

export function translate(sql: string, catalog: Catalog): Translated {
  let text = insertOr(sql, catalog);
  text = qualifyUpsert(text);
  // SQLite's CROSS JOIN … ON (a join order hint): a plain join.
  text = text.replace(/\bCROSS\s+JOIN\s+([A-Za-z_]\w*(?:\s+(?:AS\s+)?[A-Za-z_]\w*)?)\s+ON\b/gi, 'JOIN $1 ON');
  text = text.replace(/\bjson_each\(\s*(\?|@[A-Za-z_][A-Za-z0-9_]*)\s*\)/g, 'json_array_elements_text($1::json)');
  text = text.replace(/^\s*BEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)\b/i, 'BEGIN');
  // `? IS NULL` (an optional filter): PostgreSQL can't infer the parameter's type from that alone.
  text = text.replace(/\?(\s+IS\s+(?:NOT\s+)?NULL\b)/gi, '?::text$1');
  const p = rewriteParams(text);
  const ins = /^\s*INSERT\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)/i.exec(p.text);
  return { text: p.text, names: p.names, insertInto: ins ? ins[1] : null };
}

/** The values for $1..$n from better-sqlite3-style arguments (positional, or one object of named values). */
export function bindValues(t: Translated, args: readonly unknown[]): unknown[] {
  if (t.names) {
    const obj = (args[0] ?? {}) as Record<string, unknown>;
    return t.names.map((n) => {
      if (!(n in obj)) throw new RangeError(`Missing named parameter "${n}"`);
      return toPg(obj[n]);
    });
  }
  const flat = args.length === 1 && Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  return flat.map(toPg);
}

function toPg(v: unknown): unknown {
  // PostgreSQL text never holds U+0000 (SQLite does): a NUL from a hostile reply or input becomes U+FFFD.
  if (typeof v === 'string') return v.includes('\0') ? v.replaceAll('\0', '\uFFFD') : v;
  if (typeof v === 'bigint') return v.toString();
  if (v === undefined) return null;
  return v;
}
