// Credit grants, the free monthly allowance and the ledger of charges and refunds.
import { isPg, sql, txEpoch, type DB } from './db.js';
import { all, allLater, fire, fireAtCommit, get, getLater, read, run, type Gen, type RunResult } from './op.js';
import { inPooledLockstep, notInLockstep, turnState } from './lockstep.js';
import { allocate, monthOf, type Allocation, type GrantBalance } from '../core/credits.js';

export interface GrantRow {
  id: string;
  team_id: string;
  amount: number;
  remaining: number;
  usd: number | null;
  created_at: number;
  expires_at: number;
}

export function* insertGrant(db: DB, g: GrantRow): Gen<RunResult> {
  const kept = keptOf(db, g.team_id, '');
  if (kept) kept.balance = null; // read again by the next charge
  return yield* run(
    sql(
      db,
      'INSERT INTO credit_grants (id, team_id, amount, remaining, usd, created_at, expires_at) VALUES (@id, @team_id, @amount, @remaining, @usd, @created_at, @expires_at)',
    ),
    g,
  );
}
const grantsStmt = (db: DB) =>
  sql<GrantRow>(
    db,
    'SELECT * FROM credit_grants WHERE team_id = ? AND expires_at > ? AND remaining > 0 ORDER BY created_at, rowid',
  );
const usedStmt = (db: DB) => sql<{ used: number }>(db, 'SELECT used FROM free_usage WHERE team_id = ? AND month = ?');
export const liveGrants = (db: DB, teamId: string, nowMs: number) => all(grantsStmt(db), teamId, nowMs);
export function* freeUsed(db: DB, teamId: string, month: string): Gen<number> {
  return (yield* get(usedStmt(db), teamId, month))?.used ?? 0;
}

const toBalance = (g: GrantRow): GrantBalance => ({
  id: g.id,
  remaining: g.remaining,
  expiresAt: g.expires_at,
  createdAt: g.created_at,
});

/**
 * PostgreSQL (several nodes): one charge or refund per team at a time, until this transaction ends (SQLite's writes
 * are serialized already), so a balance read is the balance written against. An advisory lock rather than the
 * team's row: each request of a group commit runs in its own savepoint, and locking a row again from a new
 * savepoint queues behind another node's waiter (a deadlock); a lock this transaction holds is simply granted again.
 * Sent with the next statement that needs an answer (which the server runs after the lock is granted): `yield*
 * read(it)` waits for the lock. Null on SQLite (its writes are serialized).
 */
const lockStmt = (db: DB) => sql(db, 'SELECT pg_advisory_xact_lock(1, hashtext(?))');
const ledgerStmt = (db: DB) =>
  sql(
    db,
    'INSERT INTO credit_ledger (team_id, email_seq, grant_id, month, amount, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
function* lockTeamLater(db: DB, teamId: string) {
  if (!isPg(db)) return null;
  return yield* getLater(lockStmt(db), teamId);
}

/** What a transaction keeps per team (turnState): the balance its charges left, and whether it queued the lock. */
interface Kept {
  month: string;
  balance: Balance | null;
  /** a late charge queued the team's credit lock for the COMMIT (chargeAtCommit) */
  locked?: boolean;
}
/**
 * PostgreSQL: turnState. SQLite, inside a transaction: the same, for this transaction's epoch (db.ts txEpoch: a
 * rollback of any of its savepoints, say a request of a group-commit turn that failed after charging, drops it), so
 * the second charge of a team in one turn reads no balance: ~10 accepts share a turn, each read ~55 µs (BENCHMARKS.md
 * "Session 23"). Exact: every write of grants, the free allowance and the ledger is in this file, and each either
 * keeps the balance it leaves (charge) or drops it (refund, insertGrant).
 */
function keptOf(db: DB, teamId: string, month: string): Kept | undefined {
  if (isPg(db)) return turnState<Kept>(db, `credits ${teamId}`, () => ({ month, balance: null }));
  if (!db.inTransaction) return undefined;
  const epoch = txEpoch(db);
  let m = keptSqlite.get(db);
  if (m?.epoch !== epoch) keptSqlite.set(db, (m = { epoch, byTeam: new Map() }));
  let k = m.byTeam.get(teamId);
  if (!k) m.byTeam.set(teamId, (k = { month, balance: null }));
  return k;
}
const keptSqlite = new WeakMap<DB, { epoch: number; byTeam: Map<string, Kept> }>();

interface Balance {
  used: number;
  grants: GrantRow[];
}
/** The balance once `plan` is charged. */
function afterCharge(b: Balance, plan: Allocation[]): Balance {
  const free = plan.filter((a) => a.grantId === null).reduce((s, a) => s + a.amount, 0);
  const taken = new Map(plan.filter((a) => a.grantId !== null).map((a) => [a.grantId, a.amount]));
  return {
    used: b.used + free,
    grants: b.grants.map((g) => (taken.has(g.id) ? { ...g, remaining: g.remaining - taken.get(g.id)! } : g)),
  };
}

/** What a charge reads, asked for ahead (prepareCharge). */
export interface PreparedCharge {
  month: string;
  /** read without the team's credit lock: the charge is checked by the server at the COMMIT (chargeAtCommit) */
  late: boolean;
  read: () => Gen<{ used: number; grants: GrantRow[] }>;
}

/**
 * Takes the team's credit lock and reads its balance for a charge at about `nowMs`, sent with the next statement
 * that needs an answer (PostgreSQL: the submit's other reads, one round trip for all; the server reads after
 * granting the lock). Hand the result to charge() in the same transaction, before anything else charges the team.
 */
export function* prepareCharge(db: DB, teamId: string, nowMs: number): Gen<PreparedCharge> {
  const month = monthOf(nowMs);
  const late = inPooledLockstep(db);
  // SQLite: the balance an earlier charge of this transaction left stands for the reads (charge uses it anyway).
  const kept = isPg(db) ? undefined : keptOf(db, teamId, month);
  if (kept?.month === month && kept.balance) {
    const balance = kept.balance;
    return {
      month,
      late,
      // eslint-disable-next-line require-yield
      read: function* () {
        return balance;
      },
    };
  }
  const locked = late ? null : yield* lockTeamLater(db, teamId);
  const used = yield* getLater(usedStmt(db), teamId, month);
  const grants = yield* allLater(grantsStmt(db), teamId, nowMs);
  return {
    month,
    late,
    read: function* () {
      if (locked) yield* read(locked);
      return { used: (yield* read(used))?.used ?? 0, grants: yield* read(grants) };
    },
  };
}

/**
 * Charges `n` credits for an email; returns the allocation, or null when not enough. In a transaction.
 * `prepared`: prepareCharge's reads from a moment before (`nowMs` or earlier, the same month; otherwise read again).
 */
export function* charge(
  db: DB,
  teamId: string,
  emailSeq: number,
  n: number,
  freeMonthly: number,
  nowMs: number,
  prepared?: PreparedCharge,
): Gen<Allocation[] | null> {
  const month = monthOf(nowMs);
  const prep = prepared?.month === month ? prepared : yield* prepareCharge(db, teamId, nowMs);
  const read = yield* prep.read();
  // PostgreSQL: the balance this transaction's earlier charges left (a turn's requests may all have read before any
  // charged: ./lockstep.ts), else what was read.
  const kept = keptOf(db, teamId, month);
  const balance = kept?.month === month && kept.balance ? kept.balance : read;
  // Grants read a moment earlier include every grant live now; allocate() leaves out any that ended since.
  const plan = allocate(n, freeMonthly - balance.used, balance.grants.map(toBalance), nowMs);
  const late = prep.late && kept !== undefined && inPooledLockstep(db);
  // A refusal is decided under the lock, where what is left counts the turn's charges (sent only with its COMMIT).
  if (!plan && late) throw notInLockstep('credits short on a balance read without the lock');
  if (!plan) return null;
  if (kept) Object.assign(kept, { month, balance: afterCharge(balance, plan) });
  if (late) {
    yield* chargeAtCommit(db, { teamId, emailSeq, month, freeMonthly, nowMs }, plan, kept);
    return plan;
  }
  const ledger = ledgerStmt(db);
  for (const a of plan) {
    if (a.grantId === null) {
      const text =
        'INSERT INTO free_usage (team_id, month, used) VALUES (?, ?, ?) ON CONFLICT (team_id, month) DO UPDATE SET used = used + excluded.used';
      yield* run(sql(db, text), teamId, month, a.amount);
    } else {
      yield* run(sql(db, 'UPDATE credit_grants SET remaining = remaining - ? WHERE id = ?'), a.amount, a.grantId);
    }
    yield* run(ledger, teamId, emailSeq, a.grantId, month, -a.amount, nowMs);
  }
  return plan;
}

/**
 * A pooled turn's charge (PostgreSQL; docs/async-store.md "Session 22"): the balance was read without the team's
 * credit lock (prepareCharge `late`), so the lock and the charge's writes go out with the turn's COMMIT, in its last
 * round trip, and the lock is held only while the server runs that round trip (not across a trip to this process and
 * back, which ran a team's turns one after another). Each write applies only if the balance still covers it (a grant's
 * `remaining`, the month's free allowance); one that does not fails with division by zero (22012), which undoes the
 * turn, and the turn runs its requests again one after another, each charge then reading under the lock as before.
 * Every other charge or refund of the team takes the same lock before it writes, so what is checked here is exact.
 */
function* chargeAtCommit(
  db: DB,
  c: { teamId: string; emailSeq: number; month: string; freeMonthly: number; nowMs: number },
  plan: Allocation[],
  kept: Kept,
): Gen<void> {
  if (!kept.locked) yield* fireAtCommit(lockStmt(db), c.teamId);
  kept.locked = true;
  for (const a of plan) {
    if (a.grantId === null) yield* fireAtCommit(freeChecked(db), c.teamId, c.month, a.amount, c.freeMonthly);
    else yield* fireAtCommit(grantChecked(db), a.amount, a.grantId, a.amount, c.nowMs);
    yield* fire(ledgerStmt(db), c.teamId, c.emailSeq, a.grantId, c.month, -a.amount, c.nowMs);
  }
}
/** PostgreSQL only: the free allowance's use, if it stays within the month's allowance; else division by zero. */
const freeChecked = (db: DB) =>
  sql(
    db,
    'WITH c AS (INSERT INTO free_usage (team_id, month, used) VALUES (?, ?, ?) ON CONFLICT (team_id, month) DO UPDATE SET used = free_usage.used + excluded.used WHERE free_usage.used + excluded.used <= ? RETURNING 1) SELECT 1 / count(*) FROM c',
  );
/** PostgreSQL only: a grant's charge, if it is live and covers it; else division by zero. */
const grantChecked = (db: DB) =>
  sql(
    db,
    'WITH c AS (UPDATE credit_grants SET remaining = remaining - ? WHERE id = ? AND remaining >= ? AND expires_at > ? RETURNING 1) SELECT 1 / count(*) FROM c',
  );

/**
 * Refunds up to `n` credits of an email back to the grants they came from (most recently
 * charged first: purchased credits before free ones). Returns how many were refunded.
 */
export function* refund(db: DB, teamId: string, emailSeq: number, n: number, nowMs: number): Gen<number> {
  const locked = yield* lockTeamLater(db, teamId);
  const kept = keptOf(db, teamId, '');
  if (kept) kept.balance = null; // read again by the next charge
  const charged = sql<{ grant_id: string | null; month: string; net: number }>(
    db,
    'SELECT grant_id, month, -sum(amount) AS net FROM credit_ledger WHERE email_seq = ? GROUP BY grant_id, month HAVING -sum(amount) > 0 ORDER BY grant_id IS NULL, grant_id DESC',
  );
  // PostgreSQL: read with the lock (one round trip), once it is granted; what the refund writes goes with the next.
  const later = yield* allLater(charged, emailSeq);
  if (locked) yield* read(locked);
  const rows = yield* read(later);
  let left = n;
  const ledger = ledgerStmt(db);
  for (const r of rows) {
    if (left === 0) break;
    const back = Math.min(left, r.net);
    if (r.grant_id === null) {
      const free = sql(
        db,
        'UPDATE free_usage SET used = max(0, used - ?) WHERE team_id = ? AND month = ?',
        'UPDATE free_usage SET used = greatest(0, used - ?) WHERE team_id = ? AND month = ?',
      );
      yield* fire(free, back, teamId, r.month);
    } else yield* fire(sql(db, 'UPDATE credit_grants SET remaining = remaining + ? WHERE id = ?'), back, r.grant_id);
    yield* fire(ledger, teamId, emailSeq, r.grant_id, r.month, back, nowMs);
    left -= back;
  }
  return n - left;
}
