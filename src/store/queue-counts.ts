// The queue summary from the counters of migration 014 (kept by triggers in each write's transaction): per team,
// recipient domain and sender domain (queue_counts), and per minute of the next attempt (queue_slots) for the
// states that change with the clock. The oldest waiting email per group comes from index seeks.
import { isPg, sql, type DB } from './db.js';
import { all as allOf, get, runSync, type Gen } from './op.js';
import { STATE, WAITING, argsFor, where, type GroupKey, type GroupRow, type QueueFilter } from './queue-admin.js';
import type { QueueState } from '../core/status.js';

/** queue_slots' slot width: the minute of next_attempt_at (ms). */
export const SLOT_MS = 60_000;

/**
 * The creation time of the domain's oldest waiting email: the first entry of the partial index
 * deliveries_waiting_domain (domain, email_seq), then the email by its key.
 */
const OLDEST_OF_DOMAIN = `SELECT e.created_at FROM emails e
  WHERE e.seq = (SELECT min(d.email_seq) FROM deliveries d WHERE d.domain = @key AND ${WAITING})`;

/**
 * The team's oldest waiting email: an email with a waiting recipient is itself not final (core/status
 * aggregate), so the first email with a waiting recipient in each non-final status, by emails_team_status.
 */
const firstOf = (status: string, cond = WAITING) => `SELECT (SELECT e.seq FROM emails e WHERE e.team_id = @key
  AND e.status = '${status}' AND EXISTS (SELECT 1 FROM deliveries d WHERE d.email_seq = e.seq AND ${cond})
  ORDER BY e.seq LIMIT 1) AS s`;
const oldestOfTeam = (cond = WAITING) => `SELECT e.created_at FROM emails e WHERE e.seq = (SELECT min(s) FROM
  (${firstOf('queued', cond)} UNION ALL ${firstOf('sent', cond)} UNION ALL ${firstOf('delivery_delayed', cond)}) AS firsts)`;
const OLDEST_OF_TEAM = oldestOfTeam();

/** The group's column in the counter tables and in the delivery rows (by state: one group, split later). */
const COL: Record<GroupKey, [counter: string, row: string]> = {
  domain: ['domain', 'd.domain'],
  team: ['team_id', 'e.team_id'],
  state: ["''", "''"],
};

/** A statement's rows, or its first row's single value, given only the named parameters it uses. */
const all = <R>(db: DB, text: string, params: Record<string, unknown>): Gen<R[]> =>
  allOf(sql<R>(db, text), ...argsFor(text, params));
const first = (db: DB, text: string, params: Record<string, unknown>): Gen<number | undefined> =>
  get(sql<number>(db, text).pluck(), ...argsFor(text, params));

/** The team, domain and sender domain filters over the counter tables' columns or over the rows (d, e). */
function keyWhere(f: QueueFilter, rows: boolean): { text: string; params: Record<string, unknown> } {
  const [team, domain, sender] = rows
    ? ['e.team_id', 'd.domain', 'e.sender_domain']
    : ['team_id', 'domain', 'sender_domain'];
  const parts: string[] = [];
  const params: Record<string, unknown> = {};
  const add = (cond: string, name: string, value: unknown) => {
    parts.push(cond);
    params[name] = value;
  };
  if (f.teamId !== undefined) add(`${team} = @team`, 'team', f.teamId);
  if (f.domains?.length === 1) add(`${domain} = @domain`, 'domain', f.domains[0]);
  else if (f.domains !== undefined)
    add(`${domain} IN (SELECT value FROM json_each(@domains))`, 'domains', JSON.stringify(f.domains));
  if (f.senderDomain !== undefined) add(`${sender} = @sender`, 'sender', f.senderDomain);
  return { text: parts.map((p) => ` AND ${p}`).join(''), params };
}

/** A group's waiting recipients by state; [i]: never attempted (0) or attempted (1). */
interface StateAcc {
  held: number;
  rest: [number, number];
  leased: [number, number];
  due: [number, number];
}

/**
 * The waiting recipients matching the team, domain and sender filters, per group and state at `now`, from:
 * queue_counts (totals, held), queue_slots before now's minute (due), the current minute's through
 * deliveries_due, and the leased recipients through deliveries_leased (each in its state: in flight, or due or
 * ahead once its lease ran out). What is left of a group's not held recipients lies ahead: scheduled, or
 * deferred if attempted. Cost: O(counter rows read + half a minute's due recipients at most + leased recipients).
 */
export function* stateGroups(db: DB, by: GroupKey, f: QueueFilter, now: number): Gen<Map<string, StateAcc>> {
  const minute = Math.floor(now / SLOT_MS);
  const [col, rowCol] = COL[by];
  const cw = keyWhere(f, false);
  // The rows' domain filter is applied here, not in SQL: the planner would walk the domain's waiting rows.
  const rw = keyWhere({ ...f, domains: undefined }, true);
  const domains = f.domains && new Set(f.domains);
  const acc = new Map<string, StateAcc>();
  for (const r of yield* all<{ key: string; held: number; fresh: number; deferred: number }>(
    db,
    `SELECT ${col} AS key, sum(held) AS held, sum(recipients - held - deferred) AS fresh, sum(deferred) AS deferred
    FROM queue_counts WHERE true${cw.text} GROUP BY 1`,
    cw.params,
  ))
    acc.set(r.key, { held: r.held, rest: [r.fresh, r.deferred], leased: [0, 0], due: [0, 0] });
  // Held needs neither the slots nor the leases; in flight only the leases.
  const asked = (states: QueueState[]) => !f.states || f.states.some((s) => states.includes(s));
  const dueAsked = asked(['due', 'scheduled', 'deferred']);
  const current = new Map<string, [number, number]>();
  if (dueAsked)
    for (const r of yield* all<{ key: string; slot: number; attempted: number; n: number }>(
      db,
      `SELECT ${col} AS key, slot, attempted, sum(recipients) AS n FROM queue_slots
      WHERE slot <= @minute${cw.text} GROUP BY 1, 2, 3`,
      { ...cw.params, minute },
    )) {
      const a = acc.get(r.key);
      const i = r.attempted ? 1 : 0;
      if (a && r.slot < minute) a.due[i] += r.n;
      else if (a) (current.get(r.key) ?? current.set(r.key, [0, 0]).get(r.key)!)[i] += r.n;
    }
  // The emails only when the team or sender domain matters.
  const from =
    by === 'team' || f.teamId !== undefined || f.senderDomain !== undefined
      ? 'deliveries d CROSS JOIN emails e ON e.seq = d.email_seq'
      : 'deliveries d';
  // Now's minute: in its first half, its recipients already due; in its second half, its slot less those whose
  // next attempt still lies ahead (the fewer rows, if they are spread evenly). Both through deliveries_due.
  const firstHalf = now - minute * SLOT_MS < SLOT_MS / 2;
  if (dueAsked) {
    if (!firstHalf) for (const [key, n] of current) for (const i of [0, 1]) acc.get(key)!.due[i] += n[i];
    const range = firstHalf
      ? 'd.next_attempt_at >= @lo AND d.next_attempt_at <= @hi'
      : 'd.next_attempt_at > @lo AND d.next_attempt_at < @hi';
    const bounds = firstHalf ? { lo: minute * SLOT_MS, hi: now } : { lo: now, hi: (minute + 1) * SLOT_MS };
    for (const r of yield* all<{ key: string; domain: string; attempted: number; n: number }>(
      db,
      `SELECT ${rowCol} AS key, d.domain, d.attempts > 0 AS attempted, count(*) AS n FROM ${from}
      WHERE ${range} AND d.leased_until IS NULL AND d.held_at IS NULL AND ${WAITING}${rw.text} GROUP BY 1, 2, 3`,
      { ...rw.params, ...bounds },
    )) {
      const a = acc.get(r.key);
      if (a && (!domains || domains.has(r.domain))) a.due[r.attempted ? 1 : 0] += firstHalf ? r.n : -r.n;
    }
  }
  // The leased recipients (the delivery loop's claims), each in its own state: in flight, or once the lease ran
  // out (a crashed or stopped process's claims) due or ahead. Through deliveries_leased (`> 0`: a range, so the
  // planner takes that index rather than walking deliveries_waiting).
  if (asked(['in_flight', 'due', 'scheduled', 'deferred']))
    for (const r of yield* all<{ key: string; domain: string; attempted: number; state: QueueState; n: number }>(
      db,
      `SELECT ${rowCol} AS key, d.domain, d.attempts > 0 AS attempted, ${STATE} AS state, count(*) AS n FROM ${from}
      WHERE d.leased_until > 0 AND d.held_at IS NULL AND ${WAITING}${rw.text} GROUP BY 1, 2, 3, 4`,
      { ...rw.params, now },
    )) {
      const a = acc.get(r.key);
      if (!a || (domains && !domains.has(r.domain))) continue;
      const i = r.attempted ? 1 : 0;
      if (r.state === 'in_flight') a.leased[i] += r.n;
      else if (r.state === 'due') a.due[i] += r.n; // else ahead: what rest keeps beyond the leased and the due
    }
  return acc;
}

/** A group's counts by state: [state, attempted, recipients]. */
function cellsOf(a: StateAcc): [QueueState, number, number][] {
  return [
    ['held', 0, a.held],
    ...[0, 1].flatMap((i): [QueueState, number, number][] => [
      ['in_flight', i, a.leased[i]],
      ['due', i, a.due[i]],
      [i ? 'deferred' : 'scheduled', i, a.rest[i] - a.leased[i] - a.due[i]],
    ]),
  ];
}

const FAST_FILTERS = new Set(['teamId', 'domains', 'senderDomain', 'states']);

/** Whether the counters can answer a summary with this filter (tag, email and age filters read the rows). */
export const countable = (f: QueueFilter): boolean =>
  Object.entries(f).every(([k, v]) => v === undefined || FAST_FILTERS.has(k));

/**
 * The oldest matching waiting email's creation time: by the team's non-final emails (emails_team_status) when
 * a team is named, by each domain's waiting recipients (deliveries_waiting_domain), else by all waiting
 * recipients (deliveries_waiting), in email order; held: the held ones (deliveries_held), in email order; in flight:
 * all the leased ones. Cost: the entries read before the first match (in flight: the leased recipients).
 */
function* oldestMatching(db: DB, f: QueueFilter, now: number): Gen<number> {
  if (f.states?.length === 1 && f.states[0] === 'in_flight') {
    // The leased recipients are few (the delivery loop's claims): all of them by deliveries_leased.
    const w = where(f, now);
    return (
      (yield* first(
        db,
        `SELECT min(e.created_at) FROM deliveries l CROSS JOIN deliveries d ON d.id = l.id
      CROSS JOIN emails e ON e.seq = d.email_seq WHERE l.leased_until > @now AND ${w.text}`,
        w.params,
      )) ?? Infinity
    );
  }
  if (f.states?.length === 1 && f.states[0] === 'held') {
    // The held recipients in email order (deliveries_held), to the first that matches.
    const w = where(f, now);
    return (
      (yield* first(
        db,
        `SELECT e.created_at FROM deliveries h CROSS JOIN deliveries d ON d.id = h.id
      CROSS JOIN emails e ON e.seq = d.email_seq WHERE h.held_at IS NOT NULL AND ${w.text} ORDER BY h.email_seq LIMIT 1`,
        w.params,
      )) ?? Infinity
    );
  }
  if (f.teamId === undefined && f.domains !== undefined && f.domains.length > 1) {
    let min = Infinity;
    for (const d of f.domains) min = Math.min(min, yield* oldestMatching(db, { ...f, domains: [d] }, now));
    return min;
  }
  const w = where(f, now);
  if (f.teamId !== undefined)
    return (yield* first(db, oldestOfTeam(w.text), { ...w.params, key: f.teamId })) ?? Infinity;
  return (
    (yield* first(
      db,
      `SELECT e.created_at FROM deliveries d CROSS JOIN emails e ON e.seq = d.email_seq WHERE ${w.text}
    ORDER BY d.email_seq LIMIT 1`,
      w.params,
    )) ?? Infinity
  );
}

/**
 * Counts per domain, team or state of the waiting recipients that match a filter on team, domains, sender
 * domain and states (see countable), from the counters: O(counter rows) plus stateGroups' part when the states
 * matter, plus one oldest-email seek per group.
 */
export function* summarizeCounts(db: DB, by: GroupKey, f: QueueFilter = {}, now = Date.now()): Gen<GroupRow[]> {
  const unfiltered = Object.values(f).every((v) => v === undefined);
  let out: Omit<GroupRow, 'oldest_at'>[];
  if (by === 'state' || f.states !== undefined) {
    const groups = new Map<string, Omit<GroupRow, 'oldest_at'>>();
    for (const [key, a] of yield* stateGroups(db, by, f, now))
      for (const [state, attempted, n] of cellsOf(a)) {
        if (n === 0 || (f.states !== undefined && !f.states.includes(state))) continue;
        const k = by === 'state' ? state : key;
        const g = groups.get(k) ?? { key: k, recipients: 0, held: 0, deferred: 0 };
        g.recipients += n;
        if (state === 'held') g.held += n;
        else if (attempted) g.deferred += n;
        groups.set(k, g);
      }
    out = [...groups.values()];
  } else {
    const w = keyWhere(f, false);
    out = yield* all<Omit<GroupRow, 'oldest_at'>>(
      db,
      `SELECT ${COL[by][0]} AS key, sum(recipients) AS recipients, sum(held) AS held, sum(deferred) AS deferred
      FROM queue_counts WHERE true${w.text} GROUP BY 1 HAVING sum(recipients) > 0`,
      w.params,
    );
  }
  if (unfiltered && by !== 'state') {
    const oldest = sql<number>(db, by === 'domain' ? OLDEST_OF_DOMAIN : OLDEST_OF_TEAM).pluck();
    const rows: GroupRow[] = [];
    for (const g of out) rows.push({ ...g, oldest_at: (yield* get(oldest, { key: g.key })) ?? Infinity });
    return rows;
  }
  const rows: GroupRow[] = [];
  for (const g of out) {
    const narrowed: QueueFilter =
      by === 'domain'
        ? { ...f, domains: [g.key] }
        : by === 'team'
          ? { ...f, teamId: g.key }
          : { ...f, states: [g.key as QueueState] };
    rows.push({ ...g, oldest_at: yield* oldestMatching(db, narrowed, now) });
  }
  return rows;
}

/**
 * One snapshot (a read transaction, DEFERRED: op.ts `transaction` is IMMEDIATE, which would take SQLite's write
 * lock): the counters and the seeks see the same writes. Not a plan: runs its plan inside with runSync (SQLite).
 */
export const summarizeFromCounts = (db: DB, by: GroupKey, f: QueueFilter = {}, now = Date.now()): GroupRow[] =>
  db.transaction(() => runSync(summarizeCounts(db, by, f, now)))();

/**
 * summarizeFromCounts as a plan. PostgreSQL: the plan itself, which a pool may run (READ COMMITTED gives each statement
 * its own snapshot, in a transaction or not, so the synchronous form's BEGIN … COMMIT bought nothing there); SQLite:
 * the snapshot above, at once.
 */
export function* summarizeFromCountsPlan(db: DB, by: GroupKey, f: QueueFilter = {}, now = Date.now()): Gen<GroupRow[]> {
  if (isPg(db)) return yield* summarizeCounts(db, by, f, now);
  return summarizeFromCounts(db, by, f, now);
}
