// The PostgreSQL engine behind the same small API the store uses from better-sqlite3: prepare →
// run/get/all/pluck, exec, transaction (BEGIN, nested SAVEPOINTs), inTransaction, close. Statements are
// translated once (./translate.ts) and prepared by name on the connection.
import type Database from 'better-sqlite3';
import { SyncPgClient } from './sync-client.js';
import { bindValues, translate, type Catalog, type Translated } from './translate.js';

export interface RunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

const IDENTITY_SQL = `SELECT c.table_name, c.column_name FROM information_schema.columns c
  WHERE c.table_schema = current_schema() AND c.is_identity = 'YES'`;
const PK_SQL = `SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc
  JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
  WHERE tc.table_schema = current_schema() AND tc.constraint_type = 'PRIMARY KEY' ORDER BY kcu.ordinal_position`;

export class PgStatement<R = unknown> {
  private plucked = false;
  private readonly name: string;
  private returningId: { text: string; name: string; col: string } | null | undefined;

  constructor(
    private readonly db: PgDatabase,
    private readonly t: Translated,
    id: number,
  ) {
    this.name = `s${id}`;
  }

  pluck(on = true): this {
    this.plucked = on;
    return this;
  }

  private query(args: unknown[], array: boolean) {
    return this.db.client.query(this.t.text, bindValues(this.t, args), { array, name: this.name });
  }

  all(...args: unknown[]): R[] {
    const r = this.query(args, this.plucked);
    return (this.plucked ? r.rows.map((row) => (row as unknown[])[0]) : r.rows) as R[];
  }

  get(...args: unknown[]): R | undefined {
    return this.all(...args)[0];
  }

  iterate(...args: unknown[]): IterableIterator<R> {
    return this.all(...args)[Symbol.iterator]();
  }

  run(...args: unknown[]): RunResult {
    const ret = this.returning();
    if (ret) {
      const r = this.db.client.query(ret.text, bindValues(this.t, args), { name: ret.name });
      const row = r.rows[0] as Record<string, number> | undefined;
      return { changes: r.rowCount ?? 0, lastInsertRowid: row ? row[ret.col] : 0 };
    }
    const r = this.query(args, true);
    return { changes: r.rowCount ?? 0, lastInsertRowid: 0 };
  }

  /** An INSERT into a table with an identity column, without its own RETURNING: add one (lastInsertRowid). */
  private returning() {
    if (this.returningId !== undefined) return this.returningId;
    const col = this.t.insertInto ? this.db.identities.get(this.t.insertInto) : undefined;
    this.returningId =
      col && !/\bRETURNING\b/i.test(this.t.text)
        ? { text: `${this.t.text.replace(/\s*;?\s*$/, '')} RETURNING ${col}`, name: `${this.name}r`, col }
        : null;
    return this.returningId;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyFn = (...params: any[]) => unknown;

export class PgDatabase {
  readonly engine = 'postgres' as const;
  readonly client: SyncPgClient;
  readonly identities = new Map<string, string>();
  private readonly catalog: Catalog = { primaryKeys: new Map() };
  private depth = 0;
  private seq = 0;
  private open = true;

  constructor(readonly url: string) {
    this.client = new SyncPgClient(url);
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }
  get name(): string {
    return this.url.replace(/\/\/[^@/]*@/, '//');
  }

  /** Reads identity columns and primary keys (after migrations: call again when the schema changed). */
  loadCatalog(): void {
    this.identities.clear();
    this.catalog.primaryKeys.clear();
    for (const r of this.client.query(IDENTITY_SQL).rows as { table_name: string; column_name: string }[])
      this.identities.set(r.table_name, r.column_name);
    for (const r of this.client.query(PK_SQL).rows as { table_name: string; column_name: string }[]) {
      const cols = this.catalog.primaryKeys.get(r.table_name) ?? [];
      cols.push(r.column_name);
      this.catalog.primaryKeys.set(r.table_name, cols);
    }
  }

  prepare<R = unknown>(text: string): PgStatement<R> {
    return new PgStatement<R>(this, translate(text, this.catalog), ++this.seq);
  }

  /** Runs SQL text without parameters (several statements allowed); tracks BEGIN/COMMIT/ROLLBACK. */
  exec(text: string): this {
    const t = translate(text, this.catalog).text;
    const head = /^\s*(\w+)/.exec(t)?.[1]?.toUpperCase();
    this.client.query(t);
    if (head === 'BEGIN') this.depth = 1;
    else if (head === 'COMMIT' || head === 'END' || (head === 'ROLLBACK' && !/\bTO\b/i.test(t))) this.depth = 0;
    return this;
  }

  /** No SQLite pragmas here: reads answer null, settings are ignored. */
  pragma(_text: string, _opts?: { simple?: boolean }): unknown {
    return null;
  }

  transaction<F extends AnyFn>(fn: F): Database.Transaction<F> {
    const run = ((...args: unknown[]) => {
      const nested = this.depth > 0;
      const sp = `sp${this.depth}`;
      this.client.query(nested ? `SAVEPOINT ${sp}` : 'BEGIN');
      this.depth++;
      try {
        const result = fn(...args);
        this.depth--;
        this.client.query(nested ? `RELEASE SAVEPOINT ${sp}` : 'COMMIT');
        return result;
      } catch (err) {
        this.depth = nested ? this.depth - 1 : 0;
        try {
          if (nested) this.client.query(`ROLLBACK TO SAVEPOINT ${sp}; RELEASE SAVEPOINT ${sp}`);
          else this.client.query('ROLLBACK');
        } catch {
          /* the connection is gone: the server rolled back */
        }
        throw err;
      }
    }) as unknown as Database.Transaction<F>;
    run.default = run.immediate = run.deferred = run.exclusive = run;
    return run;
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.client.close();
  }
}
