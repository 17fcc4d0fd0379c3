// Rows read from the store, remembered per connection to save a query (on PostgreSQL a round trip) on a hot path.
// An entry lasts `ttlMs` (what another PostgreSQL node's change waits for); all are dropped at once when another
// connection commits to the SQLite file (the CLI: PRAGMA data_version) or when `stamp` changes (writes made
// through this process), or when another process of this node wrote something (forgetEverything: services/siblings.ts).
// Only values `keep` accepts are remembered; at most `max`, the oldest going first.
import { dataVersion, isPg, type DB } from '../store/db.js';
import type { Gen } from '../store/op.js';

/** Bumped by forgetEverything: every Remembered drops its entries at its next read. */
let dropped = 0;
/** Another process of this node revoked a key, wrote a domain or a webhook endpoint (HTTP workers): nothing remembered stays. */
export function forgetEverything(): void {
  dropped++;
}

interface Entries<V> {
  version: number;
  stamp: number;
  dropped: number;
  map: Map<string, { value: V; until: number }>;
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

  private entries(db: DB): Entries<V> {
    const version = isPg(db) ? 0 : dataVersion(db);
    const stamp = this.o.stamp?.(db) ?? 0;
    let e = this.byDb.get(db);
    if (!e || e.version !== version || e.stamp !== stamp || e.dropped !== dropped)
      this.byDb.set(db, (e = { version, stamp, dropped, map: new Map() }));
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
  }
}
