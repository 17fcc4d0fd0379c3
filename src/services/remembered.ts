// Rows read from the store, remembered per connection to save a query (on PostgreSQL a round trip) on a hot path.
// An entry lasts `ttlMs` (what another PostgreSQL node's change waits for); all are dropped at once when another
// connection commits to the SQLite file (the CLI: PRAGMA data_version) or when `stamp` changes (writes made
// through this process).
// Only values `keep` accepts are remembered; at most `max`, the oldest going first.
import { dataVersion, isPg, txEpoch, type DB } from '../store/db.js';
import type { Gen } from '../store/op.js';

interface Entries<V> {
  version: number;
  stamp: number;
  map: Map<string, { value: V; until: number }>;
  /** getAsync's reads on their way, by key: callers asking meanwhile share one. */
  reading: Map<string, Promise<V>>;
}

const versions = new WeakMap<DB, { epoch: number; version: number }>();
/**
 * SQLite's PRAGMA data_version, read once per transaction (it costs about what a small read does): while this
 * connection's transaction is open no other connection commits a change it can see (its writes hold the write lock,
 * its reads a snapshot), so the version read at its first look stands until it ends (db.ts txEpoch).
 */
function versionOf(db: DB): number {
  if (!db.inTransaction) return dataVersion(db);
  const epoch = txEpoch(db);
  const kept = versions.get(db);
  if (kept?.epoch === epoch) return kept.version;
  const version = dataVersion(db);
  versions.set(db, { epoch, version });
  return version;
}

export class Remembered<V> {
  private byDb = new WeakMap<DB, Entries<V>>();
  constructor(
    private o: {
      ttlMs: (db: DB) => number;
      max: number;
      keep: (v: V) => boolean;
      stamp?: (db: DB) => number;
    },
  ) {}

  get(db: DB, key: string, read: () => V): V {
    const e = this.entries(db);
    const now = performance.now();
    const hit = e.map.get(key);
    if (hit && hit.until > now) return hit.value;
    return this.kept(db, e, key, read(), now);
  }

  /** get with a plan reading the value: no statement at all when remembered. */
  *getPlan(db: DB, key: string, read: () => Gen<V>): Gen<V> {
    const e = this.entries(db);
    const now = performance.now();
    const hit = e.map.get(key);
    if (hit && hit.until > now) return hit.value;
    return this.kept(db, e, key, yield* read(), now);
  }

  /**
   * get with a read answered later (a plan on the pool): no statement when remembered, one read on its way per key
   * whoever asks meanwhile. A read that began before the entries were dropped (a write through this process, another
   * connection's commit on SQLite) answers its callers but is not remembered.
   */
  getAsync(db: DB, key: string, read: () => Promise<V>): Promise<V> {
    const e = this.entries(db);
    const hit = e.map.get(key);
    if (hit && hit.until > performance.now()) return Promise.resolve(hit.value);
    const on = e.reading.get(key);
    if (on) return on;
    // Remembered only while still the key's read on its way (forget() drops it: a revoked key is not brought back).
    const p: Promise<V> = read().then(
      (value) => {
        if (e.reading.get(key) !== p) return value;
        e.reading.delete(key);
        return this.kept(db, e, key, value, performance.now());
      },
      (err: unknown) => {
        if (e.reading.get(key) === p) e.reading.delete(key);
        throw err;
      },
    );
    e.reading.set(key, p);
    return p;
  }

  private entries(db: DB): Entries<V> {
    const version = isPg(db) ? 0 : versionOf(db);
    const stamp = this.o.stamp?.(db) ?? 0;
    let e = this.byDb.get(db);
    if (!e || e.version !== version || e.stamp !== stamp)
      this.byDb.set(db, (e = { version, stamp, map: new Map(), reading: new Map() }));
    return e;
  }

  private kept(db: DB, e: Entries<V>, key: string, value: V, now: number): V {
    e.map.delete(key);
    if (this.o.keep(value)) {
      if (e.map.size >= this.o.max) e.map.delete(e.map.keys().next().value!);
      e.map.set(key, { value, until: now + this.o.ttlMs(db) });
    }
    return value;
  }

  forget(db: DB, key: string): void {
    this.byDb.get(db)?.map.delete(key);
    this.byDb.get(db)?.reading.delete(key);
  }
}
