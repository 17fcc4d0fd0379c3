// The PostgreSQL engine behind the same small API the store uses from better-sqlite3: prepare →
// run/get/all/pluck, exec, transaction (BEGIN, nested SAVEPOINTs), inTransaction, close. Statements are
// translated once (./translate.ts) and prepared by name on the connection.
import type Database from 'better-sqlite3';
import { openSyncClient } from './clients.js';
import { PgError, type Deferred, type SyncClient } from './sync-client.js';
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
const FK_SQL = `SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent FROM pg_constraint c
  WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`;

/**
 * A statement whose text starts with this comment is not prepared by name but sent unnamed, so PostgreSQL plans it
 * for its actual parameters every time. For the few statements whose best plan depends on the values or on how
 * big a fast-growing table is right now (the delivery claim, the read of the claimed emails): a named statement
 * switches to a generic plan after five runs, and one made while the tables were nearly empty (a fresh database
 * under load) keeps scanning them whole until autovacuum's next ANALYZE (docs/postgres-notes.md).
 */
export const PLAN_EACH_TIME = '/* plan each time */';

export class PgStatement<R = unknown> {
  private plucked = false;
  private readonly name: string | undefined;
  private returningId: { text: string; name: string | undefined; col: string } | null | undefined;

  constructor(
    private readonly db: PgDatabase,
    private readonly t: Translated,
    id: number,
  ) {
    this.name = t.text.trimStart().startsWith(PLAN_EACH_TIME) ? undefined : `s${id}`;
  }

  pluck(on = true): this {
    this.plucked = on;
    return this;
  }

  private query(args: unknown[], array: boolean) {
    this.db.synchronousOnly();
    return this.db.client.query(this.t.text, bindValues(this.t, args), { array, name: this.name });
  }

  all(...args: unknown[]): R[] {
    const r = this.query(args, this.plucked);
    return (this.plucked ? r.rows.map((row) => (row as unknown[])[0]) : r.rows) as R[];
  }

  get(...args: unknown[]): R | undefined {
    return this.all(...args)[0];
  }

  /**
   * Inside a transaction: the rows all(...args) answers, sent with the next statement that needs an answer (several
   * reads in one round trip); the function returned reads them (sending them then if nothing did). Its error, if
   * any, surfaces with that round trip. Outside a transaction: read at once.
   */
  allLater(...args: unknown[]): () => R[] {
    this.db.synchronousOnly();
    if (!this.db.inTransaction) {
      const rows = this.all(...args);
      return () => rows;
    }
    const into: Deferred = {};
    const client = this.db.client;
    client.defer(this.t.text, bindValues(this.t, args), { array: this.plucked, name: this.name }, into);
    const plucked = this.plucked;
    return () => {
      if (!into.done) client.answer(into);
      const rows = into.rows ?? [];
      return (plucked ? rows.map((row) => (row as unknown[])[0]) : rows) as R[];
    };
  }

  /** allLater's first row. */
  getLater(...args: unknown[]): () => R | undefined {
    const rows = this.allLater(...args);
    return () => rows()[0];
  }

  /**
   * Inside a transaction the write is deferred: it travels to the server with the next statement that needs an
   * answer, or when its transaction scope ends (errors surface there, inside the scope). Reading `changes` or
   * `lastInsertRowid` sends it at once.
   */
  run(...args: unknown[]): RunResult {
    this.db.synchronousOnly();
    const ret = this.returning();
    const text = ret ? ret.text : this.t.text;
    const opts = { name: ret ? ret.name : this.name };
    const values = bindValues(this.t, args);
    const client = this.db.client;
    const col = ret?.col;
    const idOf = (r: { rows?: unknown[] }) => (col ? ((r.rows?.[0] as Record<string, number>)?.[col] ?? 0) : 0);
    this.written();
    if (!this.db.inTransaction) {
      const r = client.query(text, values, opts);
      return { changes: r.rowCount ?? 0, lastInsertRowid: idOf(r) };
    }
    const into: Deferred = {};
    client.defer(text, values, opts, into);
    const settled = () => {
      if (!into.done) client.answer(into);
      return into;
    };
    return {
      get changes() {
        return settled().rowCount ?? 0;
      },
      get lastInsertRowid() {
        return idOf(settled());
      },
    };
  }

  /**
   * The statement as another connection sends it (the asynchronous plan driver, ./plan-driver.ts): its text (with
   * a RETURNING of the identity column for a run() whose lastInsertRowid may be read), values, prepared name,
   * whether rows come back as arrays (pluck), and the column holding the inserted id.
   */
  describe(
    args: unknown[],
    write: boolean,
  ): { text: string; values: unknown[]; name?: string; array: boolean; idCol?: string } {
    const ret = write ? this.returning() : null;
    return {
      text: ret ? ret.text : this.t.text,
      values: bindValues(this.t, args),
      name: ret ? ret.name : this.name,
      array: this.plucked,
      idCol: ret?.col,
    };
  }

  /** run() whose outcome is never read (db.ts fire): deferred without a place for its answer, marked blind. */
  fire(...args: unknown[]): void {
    this.db.synchronousOnly();
    if (!this.db.inTransaction || this.returning()) {
      this.run(...args);
      return;
    }
    this.written();
    this.db.client.defer(this.t.text, bindValues(this.t, args), { name: this.name, blind: true });
  }

  /** A write is about to go out: counted (what was read is no longer sure), and marked foreign at a turn's top level. */
  private written(): void {
    this.db.writes++;
    if (this.db.depth === 1) this.db.markForeign();
  }

  /** An INSERT into a table with an identity column, without its own RETURNING: add one (lastInsertRowid). */
  private returning() {
    if (this.returningId !== undefined) return this.returningId;
    const col = this.t.insertInto ? this.db.identities.get(this.t.insertInto) : undefined;
    this.returningId =
      col && !/\bRETURNING\b/i.test(this.t.text)
        ? { text: `${this.t.text.replace(/\s*;?\s*$/, '')} RETURNING ${col}`, name: this.name && `${this.name}r`, col }
        : null;
    return this.returningId;
  }
}

/** A pooled plan's connection as the store's code sees it while its step runs (PgDatabase.scope). */
export interface PlanScope {
  /** 0 outside a transaction, 1 in one, more in savepoints */
  depth: number;
  /** counts the connection's transactions: what txMemo remembers is for one of them */
  txSerial: number;
  /** counts writes queued or sent: a reading remembered while it stays the same is still current */
  writes: number;
  /** the requests of a pooled group-commit turn advanced together (./pooled-turns.ts; lockstep.ts inLockstep) */
  lockstep: boolean;
  /** what the turn runs now (group-commit.ts afterCommit) */
  current?: unknown;
  /** the same for every connection of one pool: what its plans keep across transactions (emails.ts seq blocks) */
  readonly family: object;
  /**
   * fn once this connection's open transaction has committed (not at all if it rolls back), when it is one of its own
   * (not a turn's: pooled-turns.ts answers for those); false otherwise (group-commit.ts whenCommitted).
   */
  whenCommitted?(fn: () => void): boolean;
}

const envSwitch = (v: string | undefined): boolean | undefined => (v === 'on' ? true : v === 'off' ? false : undefined);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyFn = (...params: any[]) => unknown;

export class PgDatabase {
  readonly engine = 'postgres' as const;
  readonly client: SyncClient;
  readonly identities = new Map<string, string>();
  private readonly catalog: Catalog = { primaryKeys: new Map() };
  private readonly execTexts = new Map<string, string>();
  /** Transaction nesting: 0 outside, 1 in a top-level transaction, more in savepoints (or bare requests). */
  depth = 0;
  private seq = 0;
  /**
   * Set just before a group-commit request's scope starts (db.ts groupTx): that scope runs without a savepoint and
   * its deferred writes are not sent at its end but with the next round trip (the turn's next read or its COMMIT).
   * If that round trip fails the error may be this scope's, so the transaction is poisoned (sync-client REPLAY) and
   * the turn runs again with every scope in a savepoint flushed at its end. Read and cleared by transaction().
   */
  lazyNext = false;
  /**
   * Work other than a group-commit request joined the open transaction (a nested scope or a write directly at its
   * top level: the delivery loop's claims and results, a key's last use): a replay of the turn would undo it
   * unseen, so groupTx runs the turn's later requests in savepoints. Cleared when a transaction begins.
   */
  foreignJoined = false;
  /** Before other work joins: the bare requests' writes are sent now, so their errors surface before it. */
  markForeign(): void {
    if (this.client.unconfirmed) this.client.flush();
    this.foreignJoined = true;
  }
  /** A bare scope failed with its writes in the transaction (see transaction()): read and cleared by takeDirty. */
  private dirty = false;
  takeDirty(): boolean {
    const d = this.dirty;
    this.dirty = false;
    return d;
  }
  /**
   * Group-commit turns commit with commitLater (./group-commit.ts): their COMMIT is sent without waiting. Undefined
   * until the service decides (a process that answers the API: yes); MTA_PG_COMMIT_AHEAD=on|off decides for every process.
   */
  commitAhead: boolean | undefined = envSwitch(process.env.MTA_PG_COMMIT_AHEAD);
  /** Commits an open group-commit turn before other work starts a transaction (./group-commit.ts leaveTurn). */
  leavingTurn?: () => void;
  /** Counts top-level transactions begun: what a reading remembered for one transaction is keyed by (txMemo). */
  txSerial = 0;
  /** Counts statements run through run() or exec(): a reading remembered while it stays the same is still ours. */
  get writes(): number {
    return this.scope ? this.scope.writes : this.syncWrites;
  }
  set writes(n: number) {
    if (this.scope) this.scope.writes = n;
    else this.syncWrites = n;
  }
  private syncWrites = 0;
  /**
   * While a step of a plan run on the pool's connection runs (./plan-connection.ts PlanConnection): that connection, whose
   * transaction, writes and per-transaction memos (db.ts txMemo) the store's code sees through this object, and on
   * which the synchronous statements refuse to run (synchronousOnly). Null otherwise.
   */
  scope: PlanScope | null = null;
  /** A statement of the synchronous engine while a pooled plan's step runs would land outside its transaction. */
  synchronousOnly(): void {
    if (this.scope) throw new PgError('a synchronous statement (runSync) inside a plan run on the pool');
  }
  private open = true;

  constructor(readonly url: string) {
    this.client = openSyncClient(url);
    this.client.txOpen = () => this.depth > 0;
  }

  get inTransaction(): boolean {
    return this.scope ? this.scope.depth > 0 : this.depth > 0;
  }

  /** Reads identity columns, primary keys and foreign keys (after migrations: call again when the schema changed). */
  loadCatalog(): void {
    const parents = new Map<string, Set<string>>();
    for (const r of this.client.query(FK_SQL).rows as { child: string; parent: string }[]) {
      const [child, parent] = [r.child.replace(/"/g, '').toLowerCase(), r.parent.replace(/"/g, '').toLowerCase()];
      parents.set(child, (parents.get(child) ?? new Set()).add(parent));
    }
    this.client.parents = parents;
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
    this.synchronousOnly();
    // BEGIN and COMMIT of every group-commit turn: translated once (other texts may depend on the catalog).
    let t = this.execTexts.get(text);
    if (t === undefined) {
      t = translate(text, this.catalog).text;
      if (/^\s*(BEGIN|COMMIT|ROLLBACK|END)\s*$/i.test(text)) this.execTexts.set(text, t);
    }
    const head = /^\s*(\w+)/.exec(t)?.[1]?.toUpperCase();
    if (head === 'BEGIN') {
      this.client.defer(t, []); // sent with the transaction's first statement that needs an answer
      this.depth = 1;
      this.txSerial++;
      this.foreignJoined = false;
      return this;
    }
    const ends = head === 'COMMIT' || head === 'END' || (head === 'ROLLBACK' && !/\bTO\b/i.test(t));
    this.writes++;
    if (head === 'ROLLBACK' && ends) this.client.discard();
    try {
      this.client.query(t);
    } finally {
      if (ends) this.depth = 0;
    }
    return this;
  }

  /**
   * Ends the open transaction with a COMMIT sent without waiting (SyncClient.sendLater): `done` runs once its answer
   * is read, with null or the error that rolled it back. False, with nothing sent and the transaction still open,
   * when the client cannot, or when work other than group-commit requests joined it (a replay would undo that
   * work unseen): then exec('COMMIT').
   */
  commitLater(done: (err: PgError | null) => void): boolean {
    if (this.depth !== 1 || this.foreignJoined || !this.client.sendLater('COMMIT', done)) return false;
    this.writes++;
    this.depth = 0;
    return true;
  }

  /**
   * A top-level transaction whose COMMIT (with the writes still queued) is sent without waiting: fn runs now (its
   * reads wait as usual; a throw rolls back and is thrown), then `done` runs once the COMMIT's answer is read, with
   * its error if the server refused any of the queued writes (nothing of the transaction was kept). Where the
   * COMMIT cannot go that way (a transport without pipelining, a connection closed or poisoned) it is sent at once
   * and done runs before this returns.
   */
  transactionLater<T>(fn: () => T, done: (err: PgError | null) => void): T {
    if (this.depth > 0) throw new Error('transactionLater inside a transaction');
    this.client.defer('BEGIN', []);
    this.txSerial++;
    this.foreignJoined = false;
    this.depth = 1;
    let result: T;
    try {
      result = fn();
    } catch (err) {
      this.depth = 0;
      this.rollback(null);
      throw err;
    }
    this.writes++;
    this.depth = 0;
    if (this.client.sendLater('COMMIT', done)) return result;
    let error: PgError | null = null;
    try {
      this.client.query('COMMIT');
    } catch (err) {
      this.rollback(null);
      error = err instanceof PgError ? err : new PgError(String((err as Error)?.message ?? err));
    }
    done(error);
    return result;
  }

  /** No SQLite pragmas here: reads answer null, settings are ignored. */
  pragma(_text: string, _opts?: { simple?: boolean }): unknown {
    return null;
  }

  /**
   * BEGIN or SAVEPOINT … COMMIT or RELEASE, like better-sqlite3. Deferred writes (see run) make a scope cost one
   * round trip plus one per read; its end sends what is left, so a failing write fails its own scope.
   */
  transaction<F extends AnyFn>(fn: F): Database.Transaction<F> {
    const run = ((...args: unknown[]) => {
      const lazy = this.lazyNext;
      this.lazyNext = false;
      const nested = this.depth > 0;
      // A group-commit request (lazyNext) runs bare: no SAVEPOINT, no RELEASE. If it fails after writing, or the
      // server refused one of its statements, the turn's transaction is dirty and groupTx runs the others again.
      const bare = lazy && nested;
      if (nested && !lazy && this.depth === 1) this.markForeign();
      const mark = this.writes;
      const sp = `sp${this.depth}`;
      if (!bare) this.client.defer(nested ? `SAVEPOINT ${sp}` : 'BEGIN', []);
      if (!nested) {
        this.txSerial++;
        this.foreignJoined = false;
      }
      this.depth++;
      try {
        const result = fn(...args);
        this.depth--;
        if (bare) this.client.unconfirmed = true;
        else if (nested) {
          this.client.defer(`RELEASE SAVEPOINT ${sp}`, []);
          this.client.flush();
        } else this.client.query('COMMIT');
        return result;
      } catch (err) {
        this.depth = nested ? this.depth - 1 : 0;
        if (bare) {
          if (this.writes !== mark || err instanceof PgError) this.dirty = true;
        } else this.rollback(nested ? sp : null);
        throw err;
      }
    }) as unknown as Database.Transaction<F>;
    run.default = run.immediate = run.deferred = run.exclusive = run;
    return run;
  }

  private rollback(savepoint: string | null): void {
    try {
      if (savepoint) {
        try {
          this.client.flush();
        } catch {
          /* the scope failed: rolled back just below */
        }
        this.client.query(`ROLLBACK TO SAVEPOINT ${savepoint}; RELEASE SAVEPOINT ${savepoint}`);
      } else {
        this.client.discard();
        this.client.query('ROLLBACK');
      }
    } catch {
      /* the connection is gone (the server rolled back), or the savepoint never ran */
    }
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.client.close();
  }
}
