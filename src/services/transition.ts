// The one writer of delivery and email statuses: applies recipient outcomes and operator queue actions
// through the pure state machine, derives the email status, appends events, refunds failed, suppresses hard bounces.
import {
  recipientTransition,
  aggregate,
  emailPath,
  queueTransition,
  type Holder,
  type QueueAction,
  type RecipientEvent,
  type Status,
  type EventType,
} from '../core/status.js';
import { newId } from '../core/ids.js';
import {
  emailHeadBySeq,
  emailHeadBySeqLater,
  deliveriesOf,
  outcomeReadsLater,
  deliveryById,
  setEmailStatus,
  writeDeliveryFrom,
  type DeliveryRow,
  type EmailHead,
} from '../store/emails.js';
import { appendEvent, type EventRow } from '../store/events.js';
import {
  isOutcomeRaceError,
  setEmailStatuses,
  writeDeliveriesFromLater,
  type DeliveryResult,
} from '../store/result-writes.js';
import { queueRowsOf, writeQueueState, type QueueRow } from '../store/queue-admin.js';
import { addSuppression } from '../store/suppressions.js';
import { read, type Gen } from '../store/op.js';
import { suppressionKey } from '../core/address.js';
import { refund } from '../store/credits.js';
import { setCreditsCharged } from '../store/emails.js';
import type { Claimed } from '../store/queue.js';
import type { Ctx } from './context.js';
import { countEngagementPlan, countLateBouncePlan, countStatusChangesPlan } from './stats.js';
import { countSiteChangesPlan, type SiteChange } from './site-stats.js';
import { CounterTally } from './counter-tally.js';

export interface RecipientOutcome {
  deliveryId: number;
  event: RecipientEvent;
  /** Event data (decisions.md names: attempt, mx_host, smtp_code, reason, hard, source…). */
  data: Record<string, unknown>;
  /** For `deferred`: when to try again. */
  nextAttemptAt?: number;
}

const EVENT_OF: Record<RecipientEvent, EventType> = {
  accepted: 'delivered',
  deferred: 'delivery_delayed',
  rejected: 'bounced',
  failed: 'failed',
  canceled: 'canceled',
  expired: 'bounced',
  complaint: 'complained',
  async_bounce: 'bounced',
};

/**
 * False when the recipient's status changed since `d` was read (another connection): nothing written. With
 * `writes` (a batch written optimistically, see OutcomeWrite) the write joins the batch and is taken as done.
 */
function* updateDelivery(
  ctx: Ctx,
  d: DeliveryRow,
  to: Status,
  o: RecipientOutcome,
  now: number,
  settle: boolean,
  writes?: OutcomeBatch,
  lease?: number | null,
): Gen<boolean> {
  const attempt = typeof o.data.attempt === 'number' ? o.data.attempt : d.attempts;
  const reply = typeof o.data.smtp_response === 'string' ? o.data.smtp_response : d.last_reply;
  const reason = typeof o.data.reason === 'string' ? o.data.reason : d.reason;
  // A recipient held during its attempt stays held: no retry time (migration 012).
  const held = (d as Partial<QueueRow>).held_at != null;
  const next = to === 'delivery_delayed' && !held ? (o.nextAttemptAt ?? now) : null;
  const w = { status: to, attempts: attempt, next_attempt_at: next, last_reply: reply, reason };
  if (!writes) return yield* writeDeliveryFrom(ctx.db, d.id, d.status, w, now, settle, lease);
  writes.delivery({ id: d.id, from: d.status, w, settle, lease });
  return true;
}

/**
 * The delivery loop's claim on `d` is gone: the row as read no longer carries the lease token the result was made
 * under (another node claimed it once this lease ended, or it was released). A row read without its lease (knownReads)
 * says nothing: the write checks.
 */
function claimGone(d: DeliveryRow, lease: number | null | undefined): boolean {
  if (lease === undefined) return false;
  const held = (d as Partial<QueueRow>).leased_until;
  return held !== undefined && (held === null || lease === null || Number(held) !== lease);
}

/**
 * Writes the outcome's transition; when the status changed under the read (PostgreSQL: an operator's purge or
 * cancel committed by another connection in between), reads the row again and applies the outcome to what it is
 * now. The row as it is, the status written (null: the outcome does not apply), and whether it had changed.
 * `lease`: the delivery loop's claim (its token): written only while the row still carries it; `lost` when it does
 * not (nothing written: the recipient is another node's now, or no one's).
 */
function* transition(
  ctx: Ctx,
  d: DeliveryRow,
  o: RecipientOutcome,
  now: number,
  settle: boolean,
  writes?: OutcomeBatch,
  lease?: number | null,
): Gen<{ d: DeliveryRow; to: Status | null; changed: boolean; lost?: boolean }> {
  if (claimGone(d, lease)) return { d, to: null, changed: false, lost: true };
  const to = recipientTransition(d.status, o.event);
  if (to !== null && (yield* updateDelivery(ctx, d, to, o, now, settle, writes, lease)))
    return { d, to, changed: false };
  const fresh = to === null ? d : ((yield* deliveryById(ctx.db, d.id)) ?? d);
  if (fresh !== d && claimGone(fresh, lease)) return { d: fresh, to: null, changed: true, lost: true };
  const again = fresh === d ? null : recipientTransition(fresh.status, o.event);
  if (again !== null && (yield* updateDelivery(ctx, fresh, again, o, now, settle, undefined, lease)))
    return { d: fresh, to: again, changed: true };
  ctx.log.debug({ delivery: d.id, from: fresh.status, event: o.event }, 'outcome ignored in this state');
  return { d: fresh, to: null, changed: to !== null };
}

/** Side effects of a recipient reaching a state: suppression and refunds (live mode only). */
function* sideEffects(ctx: Ctx, email: EmailHead, d: DeliveryRow, o: RecipientOutcome, now: number): Gen<number> {
  if (email.test_mode === 1) return 0;
  const hard = o.data.hard === true && (o.event === 'rejected' || o.event === 'async_bounce');
  if (hard || o.event === 'complaint') {
    yield* addSuppression(ctx.db, {
      team_id: email.team_id,
      address: suppressionKey(d.recipient),
      reason: hard ? 'hard_bounce' : 'complaint',
      email_id: email.id,
      created_at: now,
    });
  }
  return o.event === 'failed' ? yield* refund(ctx.db, email.team_id, email.seq, 1, now) : 0;
}

/** What applyOutcomes reads of one email before writing: its head and all its deliveries. */
export interface OutcomeReads {
  head: EmailHead;
  deliveries: DeliveryRow[];
}

/**
 * For a batch of result writes in one transaction (services/result-batch.ts): every email's head and deliveries read
 * in one go (PostgreSQL: one round trip for the batch instead of one per email; SQLite reads per email anyway), except
 * those the delivery loop knows (`known`, knownReads), which are not read at all.
 * Only the emails that appear once in `seqs`: an email written twice in the batch must see its first write, so
 * applyOutcomes reads it itself. The rows are read when the lookup's plan first runs; run it inside the same
 * transaction, before anything else writes to those emails.
 */
export function* readOutcomesAheadPlan(
  ctx: Ctx,
  items: readonly { seq: number; known?: OutcomeReads }[],
): Gen<(seq: number) => Gen<OutcomeReads | undefined>> {
  const count = new Map<number, number>();
  for (const { seq } of items) count.set(seq, (count.get(seq) ?? 0) + 1);
  // What the delivery loop knows of an email stands for the read: every write is checked (PostgreSQL: by the server;
  // SQLite: each compare-and-set's count of changed rows, verifyOutcomes).
  const known = new Map<number, OutcomeReads>();
  for (const i of items) if (i.known && count.get(i.seq) === 1) known.set(i.seq, i.known);
  const later = yield* outcomeReadsLater(
    ctx.db,
    [...count].filter(([seq, n]) => n === 1 && !known.has(seq)).map(([seq]) => seq),
  );
  let bySeq: Map<number, OutcomeReads> | undefined;
  return function* (seq) {
    if (!later || known.has(seq)) return known.get(seq);
    if (!bySeq) {
      const rows = { heads: yield* read(later.heads), deliveries: yield* read(later.deliveries) };
      bySeq = new Map(rows.heads.map((h) => [Number(h.seq), { head: h, deliveries: [] as DeliveryRow[] }]));
      for (const d of rows.deliveries) bySeq.get(Number(d.email_seq))?.deliveries.push(d);
    }
    return bySeq.get(seq);
  };
}

/**
 * What the delivery loop knows of an email whose recipients it took in their very insert (services/delivery.ts
 * Intake), standing for readOutcomesAhead's read when its results cover all of them: the email as inserted, and
 * each recipient as inserted (no attempt, reply, reason or hold yet). Only for a batch whose writes are checked
 * (verifyOutcomes): the batch is refused if a recipient or the email changed since (an operator's action; PostgreSQL:
 * by the server, `onServer`; SQLite: a compare-and-set that changed no row), and what a write leaves out is filled
 * from the row itself (store/result-writes.ts DELIVERIES, store/emails.ts writeDeliveryFromLater).
 */
export function knownReads(email: EmailHead, rcpts: readonly Claimed[]): OutcomeReads {
  const deliveries = rcpts.map((r): DeliveryRow => ({
    id: r.id,
    email_seq: r.email_seq,
    recipient: r.recipient,
    kind: 'to', // not known here, and not read by applyOutcomes
    domain: r.domain,
    status: r.status,
    attempts: r.attempts,
    next_attempt_at: null,
    first_attempt_at: r.first_attempt_at,
    last_reply: null,
    reason: null,
    updated_at: email.created_at,
  }));
  return { head: email, deliveries };
}

/** Thrown by verifyOutcomes: a recipient's status changed under an optimistic write (the batch is undone). */
export class OutcomeRace extends Error {
  constructor() {
    super("a recipient's status changed under the batch's writes");
  }
}

/**
 * The recipient and email status writes of a batch of results (outbound/results.ts), held until verifyOutcomes
 * writes them set-wise (store/result-writes.ts). A recipient written twice in the batch (accepted, then a
 * complaint) is one write, from the status it was read in to the last one; an email's status, the last one set.
 * The events appended meanwhile carry the email as it will be (appendStatusEvent): their listeners need not read it.
 */
export class OutcomeBatch {
  private readonly deliveries = new Map<number, DeliveryResult>();
  private readonly emails = new Map<number, { from: Status; status: Status }>();
  /** The batch's counters (GET /v1/stats and /v1/stats/sites), written once per key with its rows. */
  readonly tally = new CounterTally();

  delivery(r: DeliveryResult): void {
    const prior = this.deliveries.get(r.id);
    const lease = r.lease !== undefined ? r.lease : prior?.lease;
    this.deliveries.set(r.id, prior ? { ...r, from: prior.from, settle: prior.settle || r.settle, lease } : r);
  }

  /** `from`: the status the email was read in (or known to be in), which the new one was derived from. */
  email(seq: number, status: Status, from: Status): void {
    const prior = this.emails.get(seq);
    this.emails.set(seq, { from: prior?.from ?? from, status });
  }

  /**
   * Sends the writes; the plan it answers tells whether every recipient was still in the status it was read in.
   * `checked` (PostgreSQL): the server checks that, failing the transaction if not (see verifyOutcomes).
   */
  *write(ctx: Ctx, now: number, checked = false): Gen<() => Gen<boolean>> {
    const rows = [...this.deliveries.values()];
    const allWritten = yield* writeDeliveriesFromLater(ctx.db, rows, now, { checked });
    const emailsWritten = yield* setEmailStatuses(
      ctx.db,
      [...this.emails].map(([seq, e]) => ({ seq, ...e })),
      now,
      { checked },
    );
    yield* this.tally.flush(ctx);
    return function* () {
      return (yield* allWritten()) && emailsWritten;
    };
  }
}

/**
 * Writes a batch (OutcomeWrite.writes); throws OutcomeRace unless every recipient was still in the status it was
 * read in (one round trip on PostgreSQL). The caller then rolls the transaction back and writes one email at a time,
 * each write checked at once. `onServer` (for a COMMIT sent without waiting, lightTxLater): on PostgreSQL the
 * server makes that check and the race comes as the transaction's error (isOutcomeRace); no round trip here.
 */
export function* verifyOutcomesPlan(ctx: Ctx, writes: OutcomeBatch, onServer = false): Gen<void> {
  const allWritten = yield* writes.write(ctx, ctx.now(), onServer);
  if (!(yield* allWritten())) throw new OutcomeRace();
}

/** An OutcomeRace, thrown here or found by the server (verifyOutcomes `onServer`). */
export const isOutcomeRace = (err: unknown): boolean => err instanceof OutcomeRace || isOutcomeRaceError(err);

/**
 * How applyOutcomes writes within a batch (outbound/results.ts): `pre`, the email's rows read ahead in this
 * transaction (readOutcomesAhead); `writes`, where its recipient and email status writes wait for verifyOutcomes.
 * An email must appear once per batch (its reads would not see its own earlier writes).
 */
export interface OutcomeWrite {
  pre?: OutcomeReads;
  writes?: OutcomeBatch;
  /** The site the delivery loop reached, by recipient id (per-site statistics, services/site-stats.ts). */
  sites?: ReadonlyMap<number, string>;
  /**
   * The delivery loop's claims, by recipient id: the lease token each result was made under (store/queue.ts
   * owned()). A recipient's outcome is written only while its row still carries it; otherwise nothing of it is (no
   * write, event, webhook, counter, refund or suppression) and its id goes to `lost`.
   */
  leases?: ReadonlyMap<number, number | null>;
  lost?: Set<number>;
}

/**
 * The email's moves along `path` (emailPath): its status written (or joined to `writes`) and counted for GET
 * /v1/stats. Every status change of an email goes through here, whichever path made it (results, feedback, cancel,
 * an operator's queue action). The status it ends in.
 */
function* moveEmail(
  ctx: Ctx,
  email: EmailHead,
  path: readonly Status[],
  now: number,
  writes?: OutcomeBatch,
): Gen<Status> {
  if (!path.length) return email.status;
  const status = path[path.length - 1];
  if (writes) writes.email(email.seq, status, email.status);
  else yield* setEmailStatus(ctx.db, email.seq, status, now);
  yield* countStatusChangesPlan(ctx, email, path, writes?.tally);
  return status;
}

/**
 * Applies outcomes for recipients of one email. Must run inside a transaction. `settled`: the delivery loop's
 * claims — each recipient written here also has its lease dropped, and its id is added to the set (the loop
 * settles the others itself). `batch`: see OutcomeWrite.
 */
export function* applyOutcomesPlan(
  ctx: Ctx,
  emailSeq: number,
  outcomes: readonly RecipientOutcome[],
  settled?: Set<number>,
  batch: OutcomeWrite = {},
): Gen<EmailHead> {
  const { pre, writes, sites, leases, lost } = batch;
  const now = ctx.now();
  const headLater = pre ? null : yield* emailHeadBySeqLater(ctx.db, emailSeq); // one round trip with the deliveries
  const deliveries = new Map((pre?.deliveries ?? (yield* deliveriesOf(ctx.db, emailSeq))).map((d) => [d.id, d]));
  let email = (headLater ? yield* read(headLater) : pre!.head)!;
  const events: { type: EventType; recipient: string | null; data: Record<string, unknown> }[] = [];
  let refunded = 0;
  let changedUnder = false;
  const changes: SiteChange[] = [];
  for (const o of outcomes) {
    const read = deliveries.get(o.deliveryId);
    if (!read) continue;
    // Checked once per recipient: a second outcome of it (a simulated complaint after its delivery) follows the
    // first, which took the claim (and, written at once, cleared the lease).
    const lease = leases && settled && !settled.has(o.deliveryId) ? (leases.get(o.deliveryId) ?? null) : undefined;
    const t = yield* transition(ctx, read, o, now, settled !== undefined, writes, lease);
    const { d, to, changed } = t;
    if (changed) {
      changedUnder = true;
      deliveries.set(d.id, d);
    }
    if (t.lost) lost?.add(d.id);
    if (to === null) continue;
    settled?.add(d.id);
    changes.push({ domain: d.domain, from: d.status, to, event: o.event, site: sites?.get(d.id) });
    refunded += yield* sideEffects(ctx, email, d, o, now);
    deliveries.set(d.id, { ...d, status: to });
    events.push({
      type: EVENT_OF[o.event],
      recipient: d.recipient,
      data: o.event === 'async_bounce' ? { ...o.data, async: true } : o.data,
    });
  }
  if (changedUnder) email = (yield* emailHeadBySeq(ctx.db, emailSeq)) ?? email; // its status may have moved too
  const path = emailPath(email.status, aggregate([...deliveries.values()].map((d) => d.status)));
  const status = yield* moveEmail(ctx, email, path, now, writes);
  // A late bounce leaves a delivered email delivered (interface.md), yet it bounced: counted once per email.
  if (!path.includes('bounced') && changes.some((c) => c.event === 'async_bounce'))
    yield* countLateBouncePlan(ctx, email);
  yield* countSiteChangesPlan(ctx, email, changes, writes?.tally);
  if (refunded) yield* setCreditsCharged(ctx.db, emailSeq, email.credits_charged - refunded);
  const fresh = { ...email, status, credits_charged: email.credits_charged - refunded, updated_at: now };
  const own = new Set(events.map((e) => e.type));
  for (const s of path) if (!own.has(s)) yield* appendStatusEventPlan(ctx, fresh, s, null, {});
  for (const e of events) yield* appendStatusEventPlan(ctx, fresh, e.type, e.recipient, e.data);
  return fresh;
}

/** Appends an event of the email (a first open or click counted for GET /v1/stats), in the writer's transaction. */
export function* appendStatusEventPlan(
  ctx: Ctx,
  email: EmailHead,
  type: EventType,
  recipient: string | null,
  data: Record<string, unknown>,
): Gen<EventRow> {
  yield* countEngagementPlan(ctx, email, type);
  return yield* appendEvent(
    ctx.db,
    {
      id: newId('evt', ctx.now()),
      team_id: email.team_id,
      email_seq: email.seq,
      type,
      recipient,
      data_json: JSON.stringify(data),
      created_at: ctx.now(),
    },
    email,
  );
}

/**
 * One recipient under a queue action by `by`: its status after it, or null when the action does not apply.
 * `scheduledAt`: the email's scheduled_at; a released recipient never attempted waits for it (never sent early).
 * `writes`: a purge's compare-and-set joins the batch, taken as done (verifyOutcomes checks it); without, it is
 * written and its outcome read at once.
 */
function* actOn(
  ctx: Ctx,
  d: QueueRow,
  action: QueueAction,
  by: Holder,
  now: number,
  scheduledAt: number | null,
  writes?: OutcomeBatch,
): Gen<Status | null> {
  const move = queueTransition(
    {
      status: d.status,
      held: d.held_at !== null,
      heldBy: d.held_by,
      attempts: d.attempts,
      nextAttemptAt: d.next_attempt_at,
      leasedUntil: d.leased_until,
    },
    action,
    now,
    by,
  );
  if (move === null) return null;
  if (action === 'purge') {
    const w = { status: move.status, attempts: d.attempts, next_attempt_at: null, last_reply: d.last_reply };
    if (writes) writes.delivery({ id: d.id, from: d.status, w: { ...w, reason: 'purged' }, settle: false });
    // Delivered (or bounced) by another connection since it was read: not purged.
    else if (!(yield* writeDeliveryFrom(ctx.db, d.id, d.status, { ...w, reason: 'purged' }, now))) return null;
  }
  const notBefore = action === 'release' && d.attempts === 0 ? (scheduledAt ?? 0) : 0;
  yield* writeQueueState(ctx.db, d.id, move.heldBy, move.due, now, notBefore);
  return move.status;
}

/**
 * An operator's queue action on recipients `ids` of one email (operations.md "Queue control"): each event's
 * type is the recipient's status after it, with data.action and data.source ("operator", or "team": it never releases
 * the operator's holds, core/status queueTransition); a purge ends them
 * `failed` (reason `purged`), refunds live credits and may move the email delivery_delayed → failed.
 * Must run inside a transaction; applying it twice changes nothing more. Returns the recipients changed.
 * `batch` (services/queue.ts, a batch of emails in one transaction): `pre`, the email's rows read ahead
 * (readOutcomesAhead); `writes`, where a purge's recipient and email status writes wait for verifyOutcomes, set-wise.
 */
export function* applyQueueActionPlan(
  ctx: Ctx,
  emailSeq: number,
  ids: ReadonlySet<number>,
  action: QueueAction,
  by: { source: Holder; note?: string },
  batch: Pick<OutcomeWrite, 'pre' | 'writes'> = {},
): Gen<number> {
  const { pre, writes } = batch;
  const now = ctx.now();
  const email = pre ? pre.head : yield* emailHeadBySeq(ctx.db, emailSeq);
  if (!email) return 0;
  // The same columns either way (SELECT * of deliveries).
  const rows = pre ? (pre.deliveries as QueueRow[]) : yield* queueRowsOf(ctx.db, emailSeq);
  const data: Record<string, unknown> = { action, source: by.source };
  if (action === 'purge') Object.assign(data, { reason: 'purged' }, by.note ? { message: by.note } : {});
  const events: { type: EventType; recipient: string }[] = [];
  for (const d of rows) {
    const to = ids.has(d.id) ? yield* actOn(ctx, d, action, by.source, now, email.scheduled_at, writes) : null;
    if (to === null) continue;
    d.status = to;
    events.push({ type: to, recipient: d.recipient });
  }
  if (events.length === 0) return 0;
  const refunded =
    action === 'purge' && email.test_mode === 0
      ? yield* refund(ctx.db, email.team_id, emailSeq, events.length, now)
      : 0;
  const path = emailPath(email.status, aggregate(rows.map((d) => d.status)), true);
  const status = yield* moveEmail(ctx, email, path, now, writes);
  if (refunded) yield* setCreditsCharged(ctx.db, emailSeq, email.credits_charged - refunded);
  const fresh = { ...email, status, credits_charged: email.credits_charged - refunded, updated_at: now };
  const own = new Set(events.map((e) => e.type));
  for (const s of path) if (!own.has(s)) yield* appendStatusEventPlan(ctx, fresh, s, null, {});
  for (const e of events) yield* appendStatusEventPlan(ctx, fresh, e.type, e.recipient, data);
  return events.length;
}
