// Deferred writes that go out together (a group-commit turn's requests, a batch of delivery results) as fewer,
// multi-row statements: each `INSERT … VALUES (one row)` joins an earlier one of the same prepared statement in
// the same batch as `INSERT … VALUES (…), (…), …`. The server then runs one statement (one Bind/Execute, one
// executor start and end) where it ran many, and this thread makes one libpq call instead of many
// (docs/postgres-notes.md "Many INSERTs of a batch as one"). Pure: no I/O.
//
// An INSERT only moves earlier past statements it cannot be affected by, nor affect: INSERTs and UPDATEs of other
// tables that are not its foreign-key parents (its parent row may be written by the statement it would pass).
// Reads, DELETEs, savepoints and anything not recognised stay where they are, and nothing passes them. A merged
// statement that fails fails as one: its rows' requests are in the same batch, which is what the group commit's
// replay (sync-client REPLAY) already handles.

export interface Query {
  text: string;
  values: unknown[];
  array?: boolean;
  name?: string;
  /** Nobody reads this statement's answer (db.ts fire): an `ON CONFLICT DO NOTHING` INSERT may then merge too. */
  blind?: boolean;
}

/** The result a deferred statement receives. */
export interface Answer {
  rows?: unknown[];
  rowCount?: number | null;
}

interface Shape {
  op: 'insert' | 'update' | 'other';
  table: string | null;
  /** For `INSERT INTO t (…) VALUES (tuple) [ON CONFLICT DO NOTHING] [RETURNING …]`: the parts around the tuple. */
  head?: string;
  tuple?: string;
  tail?: string;
  returning?: boolean;
  ignoring?: boolean;
}

/** Rows per merged statement: chunks of powers of two up to this, so each INSERT has few prepared forms. */
export const MAX_ROWS = 64;

const shapes = new Map<string, Shape>();

/** The VALUES tuple's end: the parenthesis matching the one at `open`, outside string literals. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      i = text.indexOf("'", i + 1);
      if (i < 0) return -1;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** A statement's shape; remembered for prepared (named) statements only, whose texts are few and fixed. */
export function shapeOf(text: string, named = true): Shape {
  let s = named ? shapes.get(text) : undefined;
  if (s) return s;
  const m = /^\s*(INSERT\s+INTO|UPDATE)\s+"?(\w+)"?/i.exec(text);
  s = { op: m ? (/^INSERT/i.test(m[1]) ? 'insert' : 'update') : 'other', table: m ? m[2].toLowerCase() : null };
  if (s.op === 'insert') {
    const v = /\)\s*VALUES\s*\(/i.exec(text);
    const open = v ? v.index + v[0].length - 1 : -1;
    const end = open > 0 ? closing(text, open) : -1;
    const tail = end > 0 ? text.slice(end + 1) : '';
    const t = /^\s*(ON\s+CONFLICT\s+DO\s+NOTHING\s*)?(RETURNING\s+[\w\s,]+?)?\s*;?\s*$/i.exec(tail);
    if (end > 0 && t && !/\bSELECT\b/i.test(text.slice(open, end)))
      Object.assign(s, {
        head: text.slice(0, v!.index + 1),
        tuple: text.slice(open, end + 1),
        tail: tail.replace(/\s*;?\s*$/, ''),
        ignoring: t[1] !== undefined,
        returning: t[2] !== undefined,
      });
  }
  if (named) shapes.set(text, s);
  return s;
}

/** `INSERT … VALUES` of `rows` rows: the tuple repeated, its parameters renumbered (by text, then by rows). */
const texts = new Map<string, string[]>();
function mergedText(text: string, s: Shape, params: number, rows: number): string {
  let byRows = texts.get(text);
  if (!byRows) texts.set(text, (byRows = []));
  let t = byRows[rows];
  if (t) return t;
  const tuples: string[] = [];
  for (let r = 0; r < rows; r++) tuples.push(s.tuple!.replace(/\$(\d+)/g, (_, n) => `$${Number(n) + r * params}`));
  t = `${s.head} VALUES ${tuples.join(', ')}${s.tail}`;
  byRows[rows] = t;
  return t;
}

interface Entry {
  name?: string;
  shape: Shape;
  members: number[];
}

/** Where an original statement's answer is: the batch's statement `at`, row `row` of `of` rows. */
export interface Place {
  at: number;
  row: number;
  of: number;
}

export interface Plan {
  batch: Query[];
  place: Place[];
}

/**
 * The statements to send for `qs` (deferred writes, in their order) and where each one's answer will be.
 * `parents(table)`: the tables its foreign keys point at (unknown: it moves past nothing). An `ON CONFLICT DO
 * NOTHING` INSERT is merged only with others that nobody reads (`blind`): each one's own row count (0 when it
 * conflicted) would be lost. A row that conflicts with an earlier row of the same merged statement is skipped, as
 * it would have been by its own statement.
 */
export function coalesce(qs: Query[], parents: (table: string) => ReadonlySet<string> | undefined): Plan {
  const entries: Entry[] = [];
  qs.forEach((q, i) => {
    const s = shapeOf(q.text, q.name !== undefined);
    const mergeable = q.name !== undefined && s.tuple !== undefined && (!s.ignoring || (q.blind && !s.returning));
    if (mergeable) {
      const up = parents(s.table!);
      for (let j = entries.length - 1; j >= 0; j--) {
        const e = entries[j];
        if (e.name === q.name && e.members.length < MAX_ROWS) {
          e.members.push(i);
          return;
        }
        const passes = up && e.shape.op !== 'other' && e.shape.table !== s.table && !up.has(e.shape.table!);
        if (!passes) break;
      }
    }
    entries.push({ name: mergeable ? q.name : undefined, shape: s, members: [i] });
  });
  const batch: Query[] = [];
  const place: Place[] = new Array(qs.length);
  for (const e of entries) {
    for (let k = 0; k < e.members.length;) {
      let rows = 1;
      while (rows * 2 <= e.members.length - k) rows *= 2;
      const part = e.members.slice(k, k + rows);
      part.forEach((i, row) => (place[i] = { at: batch.length, row, of: rows }));
      if (rows === 1) batch.push(qs[part[0]]);
      else {
        const first = qs[part[0]];
        batch.push({
          text: mergedText(first.text, e.shape, first.values.length, rows),
          values: part.flatMap((i) => qs[i].values),
          array: first.array,
          name: `${first.name}*${rows}`,
        });
      }
      k += rows;
    }
  }
  return { batch, place };
}

/** One original statement's answer out of its merged statement's. */
export function answerOf(r: Answer, p: Place): Answer {
  if (p.of === 1) return r;
  const row = r.rows?.[p.row];
  return { rows: row === undefined ? [] : [row], rowCount: 1 };
}
