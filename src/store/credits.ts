// Credit grants, the free monthly allowance and the ledger of charges and refunds.
import { isPg, sql, type DB } from './db.js';
import { all, allLater, fire, get, getLater, read, run, type Gen } from './op.js';
import { turnState } from './lockstep.js';
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

export const insertGrant = (db: DB, g: GrantRow) =>
  run(
    sql(
      db,
      'INSERT INTO credit_grants (id, team_id, amount, remaining, usd, created_at, expires_at) VALUES (@id, @team_id, @amount, @remaining, @usd, @created_at, @expires_at)',
    ),
    g,
  );
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
function* lockTeamLater(db: DB, teamId: string) {
  if (!isPg(db)) return null;
  return yield* getLater(sql(db, 'SELECT pg_advisory_xact_lock(1, hashtext(?))'), teamId);
}

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
  read: () => Gen<{ used: number; grants: GrantRow[] }>;
}

/**
 * Takes the team's credit lock and reads its balance for a charge at about `nowMs`, sent with the next statement
 * that needs an answer (PostgreSQL: the submit's other reads, one round trip for all; the server reads after
 * granting the lock). Hand the result to charge() in the same transaction, before anything else charges the team.
 */
export function* prepareCharge(db: DB, teamId: string, nowMs: number): Gen<PreparedCharge> {
  const month = monthOf(nowMs);
  const locked = yield* lockTeamLater(db, teamId);
  const used = yield* getLater(usedStmt(db), teamId, month);
  const grants = yield* allLater(grantsStmt(db), teamId, nowMs);
  return {
    month,
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
  const read = yield* (prepared?.month === month ? prepared : yield* prepareCharge(db, teamId, nowMs)).read();
  // PostgreSQL: the balance this transaction's earlier charges left (a turn's requests may all have read before any
  // charged: ./lockstep.ts), else what was read.
  const kept = turnState(db, `credits ${teamId}`, () => ({ month, balance: null as Balance | null }));
  const balance = kept?.month === month && kept.balance ? kept.balance : read;
  // Grants read a moment earlier include every grant live now; allocate() leaves out any that ended since.
  const plan = allocate(n, freeMonthly - balance.used, balance.grants.map(toBalance), nowMs);
  if (!plan) return null;
  if (kept) Object.assign(kept, { month, balance: afterCharge(balance, plan) });
  const ledger = sql(
    db,
    'INSERT INTO credit_ledger (team_id, email_seq, grant_id, month, amount, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
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
 * Refunds up to `n` credits of an email back to the grants they came from (most recently
 * charged first: purchased credits before free ones). Returns how many were refunded.
 */
export function* refund(db: DB, teamId: string, emailSeq: number, n: number, nowMs: number): Gen<number> {
  const locked = yield* lockTeamLater(db, teamId);
  const kept = turnState(db, `credits ${teamId}`, () => ({ month: '', balance: null as Balance | null }));
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
  const ledger = sql(
    db,
    'INSERT INTO credit_ledger (team_id, email_seq, grant_id, month, amount, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
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
