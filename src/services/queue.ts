// Queue control (operations.md "Queue control"), shared by the CLI, the admin API and the dashboard: filters
// checked into a store filter, summary and list views, and hold/release/retry/purge in atomic batches of 200.
import { ApiError, invalid } from '../core/errors.js';
import { QUEUE_STATES, appliesTo, type Holder, type QueueAction, type QueueState } from '../core/status.js';
import * as qa from '../store/queue-admin.js';
import { countable, summarizeFromCountsPlan } from '../store/queue-counts.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { locksOnPool, runLocking } from '../store/pg/plan-driver.js';
import { teamById } from '../store/teams.js';
import { onEventPlan } from '../store/events.js';
import { sites } from '../store/delivery-control.js';
import { teamNamedPlan, type Owner } from './keys.js';
import { nudged } from './nudges.js';
import {
  applyQueueActionPlan,
  isOutcomeRace,
  OutcomeBatch,
  readOutcomesAheadPlan,
  verifyOutcomesPlan,
} from './transition.js';
import { enqueueEvent } from './webhooks.js';
import type { Ctx } from './context.js';

/**
 * Recipients per transaction. Each one writes its row, an event and (for a purge) a refund and webhook
 * outbox rows: 200 take 30-150 ms on a small machine, and the API answers between batches.
 */
export const BATCH = 200;
export const FILTER_NAMES = ['team', 'site', 'domain', 'sender_domain', 'tag', 'email', 'state', 'older_than'] as const;
export type FilterInput = Partial<Record<(typeof FILTER_NAMES)[number], unknown>>;
export type GroupBy = 'site' | 'domain' | 'team' | 'state';
const UNROUTED = 'unknown';

const text = (v: unknown, name: string, re = /^[^\s]{1,255}$/): string => {
  if (typeof v !== 'string' || !re.test(v)) throw invalid(name, `${name} is not a valid value.`);
  return v;
};

/** Each site's domains, as the delivery loop routed them (mta sites). */
function* siteDomains(ctx: Ctx): Gen<Map<string, string[]>> {
  return new Map((yield* sites(ctx.db)).map((s) => [s.site, JSON.parse(s.domains_json) as string[]]));
}

/** Checks the filters (CLI options or admin API parameters, snake_case names) into a store filter. */
export const parseFilter = (ctx: Ctx, input: FilterInput): Promise<qa.QueueFilter> =>
  runPlan(ctx.db, filterPlan(ctx, input));
function* filterPlan(ctx: Ctx, input: FilterInput): Gen<qa.QueueFilter> {
  for (const k of Object.keys(input))
    if (!(FILTER_NAMES as readonly string[]).includes(k)) throw invalid(k, `Unknown queue filter ${k}.`);
  const f: qa.QueueFilter = {};
  const i = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined && v !== null));
  if (i.team !== undefined) f.teamId = (yield* teamNamedPlan(ctx, text(i.team, 'team'))).id;
  if (i.domain !== undefined) f.domains = [text(i.domain, 'domain').toLowerCase()];
  if (i.site !== undefined) {
    const routed = (yield* siteDomains(ctx)).get(text(i.site, 'site')) ?? [];
    f.domains = f.domains ? f.domains.filter((d) => routed.includes(d)) : routed;
  }
  if (i.sender_domain !== undefined) f.senderDomain = text(i.sender_domain, 'sender_domain').toLowerCase();
  if (i.tag !== undefined) f.tag = text(i.tag, 'tag', /^.{1,256}$/);
  if (i.email !== undefined) f.emailId = text(i.email, 'email', /^em_[\w-]{1,64}$/);
  if (i.state !== undefined) {
    const s = text(i.state, 'state');
    if (!(QUEUE_STATES as readonly string[]).includes(s))
      throw invalid('state', `state is one of ${QUEUE_STATES.join(', ')}.`);
    f.states = [s as QueueState];
  }
  if (i.older_than !== undefined) {
    const n = Number(i.older_than);
    if (!Number.isInteger(n) || n < 0) throw invalid('older_than', 'older_than is a whole number of seconds.');
    f.createdBefore = ctx.now() - n * 1000;
  }
  return f;
}

/**
 * A team's own waiting mail as its key sees it (the Stripe model): a test key's only its test-mode emails, a
 * live key's all of them; `more` narrows it further (one email).
 */
export const ownerFilter = (owner: Owner, more: qa.QueueFilter = {}): qa.QueueFilter => ({
  ...more,
  teamId: owner.teamId,
  ...(owner.mode === 'test' ? { testMode: true as const } : {}),
});

const isEmpty = (f: qa.QueueFilter) => Object.keys(f).length === 0;
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The names of teams `ids` (read once each; an id without a team stands for itself). */
function* teamNames(ctx: Ctx, ids: Iterable<string>): Gen<(id: string) => string> {
  const names = new Map<string, string>();
  for (const id of new Set(ids)) names.set(id, (yield* teamById(ctx.db, id))?.name ?? id);
  return (id) => names.get(id) ?? id;
}

function* siteOfDomain(ctx: Ctx): Gen<(domain: string) => string> {
  const of = new Map<string, string>();
  for (const [site, domains] of yield* siteDomains(ctx)) for (const d of domains) if (!of.has(d)) of.set(d, site);
  return (d) => of.get(d) ?? UNROUTED;
}

export interface QueueEntry {
  email_id: string;
  recipient: string;
  domain: string;
  site: string;
  team: string;
  state: QueueState;
  attempts: number;
  next_attempt_at: string | null;
  last_reply: string | null;
  /** Who placed the hold (`team` or `operator`), null when not held. */
  held_by: Holder | null;
}

/** `mta queue list`: the waiting recipients, oldest first. */
export const queueList = (ctx: Ctx, f: qa.QueueFilter, limit = 100): Promise<QueueEntry[]> =>
  runPlan(ctx.db, listPlan(ctx, f, limit));
function* listPlan(ctx: Ctx, f: qa.QueueFilter, limit: number): Gen<QueueEntry[]> {
  const site = yield* siteOfDomain(ctx);
  const rows = yield* qa.listWaiting(ctx.db, f, ctx.now(), limit);
  const team = yield* teamNames(
    ctx,
    rows.map((r) => r.team_id),
  );
  return rows.map((r) => ({
    email_id: r.email_id,
    recipient: r.recipient,
    domain: r.domain,
    site: site(r.domain),
    team: team(r.team_id),
    state: r.state,
    attempts: r.attempts,
    next_attempt_at: r.state === 'held' ? null : iso(r.next_attempt_at),
    last_reply: r.last_reply,
    held_by: r.state === 'held' ? (r.held_by ?? 'operator') : null,
  }));
}

export interface QueueGroup {
  key: string;
  recipients: number;
  held: number;
  deferred: number;
  oldest_seconds: number;
}

/**
 * `mta queue summary`: counts per site (default), domain, team or state, largest first. From the counters of
 * migration 014 unless a tag, email or age filter is given (those read the matching waiting rows).
 */
export const queueSummary = (
  ctx: Ctx,
  by: GroupBy,
  f: qa.QueueFilter,
): Promise<{ by: GroupBy; groups: QueueGroup[] }> => runPlan(ctx.db, summaryPlan(ctx, by, f));
function* summaryPlan(ctx: Ctx, by: GroupBy, f: qa.QueueFilter): Gen<{ by: GroupBy; groups: QueueGroup[] }> {
  const now = ctx.now();
  const key = by === 'site' ? 'domain' : by;
  const rows = countable(f)
    ? yield* summarizeFromCountsPlan(ctx.db, key, f, now)
    : yield* qa.summarize(ctx.db, key, f, now);
  const keyOf =
    by === 'site'
      ? yield* siteOfDomain(ctx)
      : by === 'team'
        ? yield* teamNames(
            ctx,
            rows.map((r) => r.key),
          )
        : (k: string) => k;
  const groups = new Map<string, QueueGroup & { oldest: number }>();
  for (const r of rows) {
    const key = keyOf(r.key);
    const g = groups.get(key) ?? { key, recipients: 0, held: 0, deferred: 0, oldest_seconds: 0, oldest: r.oldest_at };
    g.recipients += r.recipients;
    g.held += r.held;
    g.deferred += r.deferred;
    g.oldest = Math.min(g.oldest, r.oldest_at);
    groups.set(key, g);
  }
  const out = [...groups.values()].map(({ oldest, ...g }) => ({
    ...g,
    oldest_seconds: Math.max(0, Math.floor((now - oldest) / 1000)),
  }));
  return { by, groups: out.sort((a, b) => b.recipients - a.recipients || a.key.localeCompare(b.key)) };
}

export interface ActionOptions {
  /** hold and purge with no filter act only with `all` */
  all?: boolean;
  /** purge: the operator's note, kept in the events' data.message */
  note?: string;
  /**
   * Who acts, and data.source of the events: `operator` (CLI, admin API, operator dashboard; the default) or `team`
   * (a team's own mail). A team's release leaves the operator's holds, and `matched` does not count them.
   */
  source?: Holder;
}

/**
 * Applies an action to every matching recipient, BATCH at a time, each batch one transaction through the
 * one transition writer (a crash keeps the batches committed; running it again finishes the rest). Yields
 * to the event loop between batches. Answers how many recipients it changed.
 * A batch is written set-wise: its emails' rows read in one go, a purge's compare-and-set writes in one statement
 * whose outcome is checked at the transaction's end (PostgreSQL: by the server, with its COMMIT; no write waited for
 * on the way). A recipient or email changed meanwhile by another connection (a delivery result, another node's
 * action) fails the batch, which is undone and run again one recipient at a time, each outcome read at once.
 */
export async function queueAction(
  ctx: Ctx,
  action: QueueAction,
  f: qa.QueueFilter,
  o: ActionOptions = {},
): Promise<{ matched: number }> {
  if ((action === 'hold' || action === 'purge') && isEmpty(f) && !o.all)
    throw new ApiError('validation_error', 'queue_filter_required', `A ${action} with no filter needs all: true.`);
  const allowed = appliesTo(action, o.source);
  const states = (f.states ?? allowed).filter((s) => allowed.includes(s));
  if (states.length === 0 || f.domains?.length === 0) return { matched: 0 };
  const filter = { ...f, states };
  let after = { seq: 0, id: 0 };
  let matched = 0;
  for (;;) {
    const started = performance.now();
    // PostgreSQL: on the pool with the other holders of the credit lock (a purge refunds) and of these rows' locks.
    const batch = (setWise: boolean) => {
      const tx = transaction(ctx.db, () => oneBatch(ctx, action, filter, after, started, o, setWise));
      return runLocking(ctx.db, tx, { durable: true });
    };
    const r = await batch(true).catch((err: unknown) => {
      if (!isOutcomeRace(err)) throw err;
      return batch(false);
    });
    matched += r.matched;
    if (r.matched && (action === 'release' || action === 'retry')) dueNow(ctx);
    if (r.last === null) return { matched };
    after = r.last;
    // As long a pause as the batch took (at least 10 ms): requests waiting meanwhile run to the end.
    await new Promise((res) => setTimeout(res, Math.max(10, performance.now() - started)));
  }
}

/** Recipients released or retried are due now: the delivery loop claims at once. */
function dueNow(ctx: Ctx): void {
  nudged(ctx.db, 'delivery');
}

/** Time one transaction may take before it commits what it did (whole emails) and lets the API run. */
const BATCH_MS = 60;

/**
 * One transaction: up to BATCH recipients, whole emails, stopping after BATCH_MS where it holds the event loop. `setWise`: the emails' rows read
 * at once and a purge's writes checked at the end (see queueAction); otherwise each email read and each write's
 * outcome read in turn. `last`: the cursor, null at the end.
 */
function* oneBatch(
  ctx: Ctx,
  action: QueueAction,
  filter: qa.QueueFilter,
  after: { seq: number; id: number },
  started: number,
  o: ActionOptions,
  setWise: boolean,
): Gen<{ matched: number; last: { seq: number; id: number } | null }> {
  const rows = yield* qa.candidates(ctx.db, filter, ctx.now(), after, BATCH);
  const byEmail = new Map<number, Set<number>>();
  for (const r of rows) byEmail.set(r.email_seq, (byEmail.get(r.email_seq) ?? new Set()).add(r.id));
  const by = { source: o.source ?? 'operator', note: o.note } as const;
  const end = rows.length < BATCH ? null : { seq: rows[rows.length - 1].email_seq, id: rows[rows.length - 1].id };
  // Set-wise: every email's rows read in one go; the writes of the emails taken wait for verifyOutcomes.
  const ahead = setWise
    ? yield* readOutcomesAheadPlan(
        ctx,
        [...byEmail.keys()].map((seq) => ({ seq })),
      )
    : null;
  const writes = setWise ? new OutcomeBatch() : undefined;
  // BATCH_MS bounds a batch that holds the event loop (SQLite, or PostgreSQL's synchronous connection); one on the
  // pool does not (stopping it early made the 10,000-recipient purge 117 s instead of 44: four times the batches).
  const holdsLoop = !locksOnPool(ctx.db);
  let matched = 0;
  let last = end;
  for (const [seq, ids] of byEmail) {
    const batch = ahead ? { pre: yield* ahead(seq), writes } : {};
    matched += yield* applyQueueActionPlan(ctx, seq, ids, action, by, batch);
    const done = { seq, id: Math.max(...ids) };
    if (holdsLoop && performance.now() - started > BATCH_MS && done.seq !== rows[rows.length - 1].email_seq) {
      last = done;
      break;
    }
  }
  // PostgreSQL: checked by the server, the race (if any) failing the transaction; SQLite: each row written now.
  if (writes) yield* verifyOutcomesPlan(ctx, writes, true);
  return { matched, last };
}

/**
 * For a process other than the service (the CLI): events written here get their webhook outbox rows, as
 * in the service (features/webhooks.ts); the running service's dispatcher sends them within a second.
 */
export function writeWebhooksFromThisProcess(ctx: Ctx): void {
  onEventPlan(ctx.db, (db, ev, email) => enqueueEvent(ctx, db, ev, email));
}
