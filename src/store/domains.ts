// The domains table (migrations 001/002): one row per team and domain name, holding the current DKIM
// key pair, the return-path name and the last check's per-record results; dkim_keys (007) the others.
import { nowAndAfterCommit, sql, type DB } from './db.js';
import { all, get, getLater, run, type Gen, type Later } from './op.js';
import type { DomainStatus } from '../core/domain-records.js';

export interface DomainRow {
  seq: number;
  id: string;
  team_id: string;
  name: string;
  status: DomainStatus;
  created_at: number;
  last_checked_at: number | null;
  dkim_selector: string;
  dkim_algorithm: string;
  dkim_private_key: string;
  dkim_public_key: string;
  return_path: string | null;
  return_path_verified: number;
  records_json: string | null;
  last_error: string | null;
  /** 1 when the team receives mail at this domain (migration 031) */
  receiving: number;
}

const COLS =
  'rowid AS seq, id, team_id, name, status, created_at, last_checked_at, dkim_selector, dkim_algorithm, dkim_private_key, dkim_public_key, return_path, return_path_verified, records_json, last_error, receiving';

const generations = new WeakMap<DB, number>();
/** Changes with every write of domains or their DKIM keys made through this module (signing-key caches compare it). */
export const domainsGeneration = (db: DB): number => generations.get(db) ?? 0;
const wrote = (db: DB) => nowAndAfterCommit(db, () => generations.set(db, domainsGeneration(db) + 1));

export function* insertDomain(
  db: DB,
  d: Omit<DomainRow, 'seq' | 'last_checked_at' | 'return_path_verified' | 'last_error' | 'status' | 'receiving'>,
): Gen<void> {
  yield* run(
    sql(
      db,
      `INSERT INTO domains (id, team_id, name, status, created_at, dkim_selector, dkim_algorithm, dkim_private_key, dkim_public_key, return_path, records_json)
    VALUES (@id, @team_id, @name, 'pending', @created_at, @dkim_selector, @dkim_algorithm, @dkim_private_key, @dkim_public_key, @return_path, @records_json)`,
    ),
    d,
  );
  wrote(db);
}

export const domainById = (db: DB, id: string): Gen<DomainRow | undefined> =>
  get(sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE id = ?`), id);

export const domainByName = (db: DB, teamId: string, name: string): Gen<DomainRow | undefined> =>
  get(sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE team_id = ? AND name = ?`), teamId, name);

export const domainsNamed = (db: DB, name: string): Gen<DomainRow[]> =>
  all(sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE name = ? ORDER BY rowid`), name);

/** Newest first; `before` is the seq of the last row of the previous page. Fetches limit + 1 rows. */
export const listDomains = (db: DB, teamId: string, before: number | null, limit: number): Gen<DomainRow[]> =>
  all(
    sql<DomainRow>(db, `SELECT ${COLS} FROM domains WHERE team_id = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?`),
    teamId,
    before ?? Number.MAX_SAFE_INTEGER,
    limit + 1,
  );

/** Ids of every domain, for the scheduled re-check. */
export function* allDomainIds(db: DB): Gen<string[]> {
  return (yield* all(sql<{ id: string }>(db, 'SELECT id FROM domains ORDER BY rowid'))).map((r) => r.id);
}

export function* setReceiving(db: DB, id: string, receiving: boolean): Gen<void> {
  yield* run(sql(db, 'UPDATE domains SET receiving = ? WHERE id = ?'), receiving ? 1 : 0, id);
  wrote(db);
}

/**
 * The domain that receives mail at a name: of the teams holding it with `receiving` on, the one that verified it,
 * else the oldest (as DMARC reports go); undefined when none receives there.
 */
export const receivingDomain = (db: DB, name: string): Gen<Pick<DomainRow, 'id' | 'team_id' | 'name'> | undefined> =>
  get(
    sql<Pick<DomainRow, 'id' | 'team_id' | 'name'>>(
      db,
      `SELECT id, team_id, name FROM domains WHERE name = ? AND receiving = 1
      ORDER BY CASE status WHEN 'verified' THEN 0 ELSE 1 END, rowid LIMIT 1`,
    ),
    name,
  );

export interface CheckWrite {
  id: string;
  status: DomainStatus;
  records_json: string;
  return_path_verified: number;
  last_error: string | null;
  last_checked_at: number;
}

export function* writeCheck(db: DB, w: CheckWrite): Gen<boolean> {
  wrote(db);
  const text =
    'UPDATE domains SET status = @status, records_json = @records_json, return_path_verified = @return_path_verified, last_error = @last_error, last_checked_at = @last_checked_at WHERE id = @id';
  return (yield* run(sql(db, text), w)).changes === 1;
}

// ---- dkim_keys (migration 007): next (rotation), retiring and ed25519 keys ----

export type KeyRole = 'next' | 'retiring' | 'ed25519';
export interface DkimKeyRow {
  id: number;
  domain_id: string;
  role: KeyRole;
  selector: string;
  algorithm: 'rsa' | 'ed25519';
  private_key: string;
  public_key: string;
  created_at: number;
  status: DomainStatus;
  found: string | null;
  error: string | null;
  retire_at: number | null;
}
export type NewDkimKey = Pick<
  DkimKeyRow,
  'domain_id' | 'role' | 'selector' | 'algorithm' | 'private_key' | 'public_key' | 'created_at'
> &
  Partial<Pick<DkimKeyRow, 'status' | 'retire_at'>>;

/** A domain's extra keys: ed25519 first, then the next key, then retiring keys (newest first). */
export const dkimKeys = (db: DB, domainId: string): Gen<DkimKeyRow[]> =>
  all(
    sql<DkimKeyRow>(
      db,
      `SELECT * FROM dkim_keys WHERE domain_id = ?
    ORDER BY CASE role WHEN 'ed25519' THEN 0 WHEN 'next' THEN 1 ELSE 2 END, id DESC`,
    ),
    domainId,
  );

export function* insertDkimKey(db: DB, k: NewDkimKey): Gen<void> {
  wrote(db);
  yield* run(
    sql(
      db,
      `INSERT INTO dkim_keys (domain_id, role, selector, algorithm, private_key, public_key, created_at, status, retire_at)
    VALUES (@domain_id, @role, @selector, @algorithm, @private_key, @public_key, @created_at, @status, @retire_at)`,
    ),
    { status: 'pending', retire_at: null, ...k },
  );
}

export function* writeKeyCheck(
  db: DB,
  id: number,
  r: { status: DomainStatus; found: string | null; error: string | null },
): Gen<void> {
  wrote(db);
  yield* run(sql(db, 'UPDATE dkim_keys SET status = @status, found = @found, error = @error WHERE id = @id'), {
    id,
    ...r,
  });
}

/**
 * Makes the `next` key the domain's current key; the old current key becomes `retiring` until
 * retireAt (keeping the status its record had). False when that next key is gone (nothing changes).
 */
export function* promoteNextKey(
  db: DB,
  d: DomainRow,
  nextId: number,
  oldStatus: DomainStatus,
  now: number,
  retireAt: number,
): Gen<boolean> {
  const next = yield* get(
    sql<DkimKeyRow>(db, "SELECT * FROM dkim_keys WHERE id = ? AND domain_id = ? AND role = 'next'"),
    nextId,
    d.id,
  );
  if (!next) return false;
  wrote(db);
  yield* run(sql(db, 'DELETE FROM dkim_keys WHERE id = ?'), next.id);
  yield* insertDkimKey(db, {
    domain_id: d.id,
    role: 'retiring',
    selector: d.dkim_selector,
    algorithm: d.dkim_algorithm === 'ed25519' ? 'ed25519' : 'rsa',
    private_key: d.dkim_private_key,
    public_key: d.dkim_public_key,
    created_at: now,
    status: oldStatus,
    retire_at: retireAt,
  });
  yield* run(
    sql(
      db,
      'UPDATE domains SET dkim_selector = ?, dkim_algorithm = ?, dkim_private_key = ?, dkim_public_key = ? WHERE id = ?',
    ),
    next.selector,
    next.algorithm,
    next.private_key,
    next.public_key,
    d.id,
  );
  return true;
}

/** Drops retiring keys whose grace period is over; answers how many. */
export function* dropRetiredKeys(db: DB, domainId: string, now: number): Gen<number> {
  wrote(db);
  const text = "DELETE FROM dkim_keys WHERE domain_id = ? AND role = 'retiring' AND retire_at <= ?";
  return (yield* run(sql(db, text), domainId, now)).changes;
}

/** The domain's Ed25519 signing key, only once its record verified. */
export const verifiedEd25519Key = (
  db: DB,
  domainId: string,
): Gen<Pick<DkimKeyRow, 'selector' | 'private_key'> | undefined> =>
  get(
    sql<DkimKeyRow>(
      db,
      "SELECT selector, private_key FROM dkim_keys WHERE domain_id = ? AND role = 'ed25519' AND status = 'verified'",
    ),
    domainId,
  );

export function* deleteDomain(db: DB, id: string): Gen<boolean> {
  wrote(db);
  return (yield* run(sql(db, 'DELETE FROM domains WHERE id = ?'), id)).changes === 1;
}

/** The columns a sender needs of a verified domain (DKIM key, return path). */
export interface SendingDomain {
  id: string;
  name: string;
  dkim_selector: string;
  dkim_algorithm: string;
  dkim_private_key: string;
  return_path: string | null;
  return_path_verified: number;
}
/**
 * Whether the team has `name` verified (no key read: the API's check at submit), read with the next statement that
 * needs an answer (PostgreSQL, in a transaction): `yield* read(it)` answers a row or undefined.
 */
export const isVerifiedDomainNamedLater = (db: DB, teamId: string, name: string): Gen<Later<unknown>> =>
  getLater(sql(db, "SELECT 1 FROM domains WHERE team_id = ? AND name = ? AND status = 'verified'"), teamId, name);

export const verifiedDomainNamed = (db: DB, teamId: string, name: string): Gen<SendingDomain | undefined> =>
  get(
    sql<SendingDomain>(
      db,
      "SELECT id, name, dkim_selector, dkim_algorithm, dkim_private_key, return_path, return_path_verified FROM domains WHERE team_id = ? AND name = ? AND status = 'verified'",
    ),
    teamId,
    name,
  );

/** Whether some team's domain uses `name` (lower-case) as its return-path (bounce) name. */
export function* isReturnPathName(db: DB, name: string): Gen<boolean> {
  return (
    (yield* get(sql(db, 'SELECT 1 FROM domains WHERE lower(return_path) = ? LIMIT 1').pluck(), name)) !== undefined
  );
}
