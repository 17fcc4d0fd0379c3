// Use-cases on emails: submit (idempotency, suppression, domain check, credits, one transaction),
// cancel, fetch, list and events. Shared by the HTTP API, the dashboard and the CLI.
import { hash } from 'node:crypto';
import { ApiError, invalid, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { TokenSigner } from '../core/signed-token.js';
import type { DB } from '../store/db.js';
import { groupPlan, afterCommit } from '../store/group-commit.js';
import * as emails from '../store/emails.js';
import { eventsOf } from '../store/events.js';
import { getIdem, putIdem } from '../store/idempotency.js';
import { isSuppressedLater } from '../store/suppressions.js';
import { read, runPlan, transaction, type Gen, type Later } from '../store/op.js';
import { runLocking } from '../store/pg/plan-driver.js';
import { charge, prepareCharge, refund } from '../store/credits.js';
import { secret } from '../store/settings.js';
import { suppressionKey } from '../core/address.js';
import { checkEmail, type CheckedEmail, type EmailInput, type Recipient } from './email-input.js';
import { insertAttachments, insertMessage } from '../store/email-content.js';
import { presentEmail, presentEvent, type Email } from './present.js';
import { appendStatusEventPlan, applyOutcomesPlan } from './transition.js';
import { availableCreditsPlan } from './credits.js';
import { anyFound, hasVerifiedDomainForLater } from './sending-domain.js';
import { intakeOf, type Claimed } from './delivery.js';
import type { Owner, Principal } from './keys.js';
import type { Ctx } from './context.js';

export type EmailFilter = emails.EmailFilter;

export interface SubmitResult {
  status: number;
  body: Email;
  replayed: boolean;
}

const requestHash = (body: unknown) => hash('sha256', JSON.stringify(body), 'hex');

/** The recipients, once each, with the read of whether each is suppressed (live mode; sent later). */
function* liveRecipients(ctx: Ctx, p: Principal, all: Recipient[]) {
  const seen = new Set<string>();
  const checks: { r: Recipient; later: Later<unknown> | null }[] = [];
  for (const r of all) {
    const key = suppressionKey(r.address);
    if (seen.has(key)) continue;
    seen.add(key);
    checks.push({ r, later: p.mode === 'live' ? yield* isSuppressedLater(ctx.db, p.teamId, key) : null });
  }
  return checks;
}

/** The recipients kept and those suppressed, once liveRecipients' reads are answered. */
function* keptRecipients(checks: { r: Recipient; later: Later<unknown> | null }[]) {
  const kept: Recipient[] = [];
  const suppressed: string[] = [];
  for (const c of checks) {
    if (c.later !== null && (yield* read(c.later)) !== undefined) suppressed.push(c.r.address);
    else kept.push(c.r);
  }
  return { kept, suppressed };
}

/** The recipients that get a delivery and the credits they cost (live mode); 422 when every one is suppressed. */
export function* plan(ctx: Ctx, p: Principal, c: CheckedEmail) {
  // PostgreSQL: every recipient's suppression check and the sender domain's in one round trip.
  const recipients = yield* liveRecipients(ctx, p, c.recipients);
  const domainFound = p.mode === 'live' ? yield* hasVerifiedDomainForLater(ctx, p.teamId, c.from.domain) : null;
  const sender = p.mode === 'live' && c.sender && c.sender.domain !== c.from.domain ? c.sender : null;
  const senderFound = sender ? yield* hasVerifiedDomainForLater(ctx, p.teamId, sender.domain) : null;
  const { kept, suppressed } = yield* keptRecipients(recipients);
  if (kept.length === 0)
    throw invalid('to', 'Every recipient is on the suppression list.', 'all_recipients_suppressed');
  if (domainFound !== null && !(yield* anyFound(domainFound))) {
    throw invalid('from', `The domain ${c.from.domain} is not a verified domain of this team.`, 'domain_not_verified');
  }
  if (senderFound !== null && !(yield* anyFound(senderFound)))
    throw invalid(
      'headers',
      `The Sender domain ${sender!.domain} is not a verified domain of this team.`,
      'domain_not_verified',
    );
  return { kept, suppressed, credits: p.mode === 'live' ? kept.length : 0 };
}

function rowOf(ctx: Ctx, p: Principal, c: CheckedEmail, credits: number, raw: boolean): emails.NewEmail {
  const now = ctx.now();
  const input = c.input;
  return {
    id: newId('em', now),
    team_id: p.teamId,
    test_mode: p.mode === 'test' ? 1 : 0,
    status: 'queued',
    from_addr: input.from.trim(),
    to_json: JSON.stringify(c.to),
    cc_json: c.cc && JSON.stringify(c.cc),
    bcc_json: c.bcc && JSON.stringify(c.bcc),
    reply_to: c.replyTo,
    subject: input.subject,
    html: input.html ?? null,
    text: input.text ?? null,
    tags_json: input.tags ? JSON.stringify(input.tags) : null,
    headers_json: c.headers && JSON.stringify(c.headers),
    tracking_opens: input.tracking?.opens ? 1 : 0,
    tracking_clicks: input.tracking?.clicks ? 1 : 0,
    scheduled_at: c.scheduledAt,
    credits_charged: credits,
    sender_domain: c.from.domain,
    created_at: now,
    updated_at: now,
    attachments_json: c.attachments.info.length ? JSON.stringify(c.attachments.info) : null,
    raw_message: raw ? 1 : 0,
  };
}

/**
 * The one way an email enters the store (HTTP, batch, SMTP submission): deliveries, tags, bytes (attachments or the
 * submitted message, in their own tables), credits and the `queued` event. Call inside a transaction.
 * `message(id)`: builds the submitted message's final bytes once the email id is known.
 */
export function* insertChecked(
  ctx: Ctx,
  p: Principal,
  c: CheckedEmail,
  message?: (id: string) => Buffer,
): Gen<emails.EmailRow> {
  // Live: the credit lock and balance reads go with plan()'s reads (PostgreSQL: one round trip for all).
  const prepared = p.mode === 'live' ? yield* prepareCharge(ctx.db, p.teamId, ctx.now()) : undefined;
  const { kept, suppressed, credits } = yield* plan(ctx, p, c);
  const row = rowOf(ctx, p, c, credits, message !== undefined);
  const due = c.scheduledAt ?? row.created_at;
  const lease = leaseNow(ctx, kept, due <= row.created_at);
  const ids: (() => number)[] = [];
  const rcpts = kept.map((r) => ({
    recipient: r.address,
    kind: r.kind,
    domain: r.domain,
    status: 'queued' as const,
    next_attempt_at: lease?.until ?? due,
    leased_until: lease?.until ?? null,
  }));
  const seq = yield* emails.insertEmail(ctx.db, row, c.input.tags ?? [], rcpts, lease ? ids : undefined);
  // The leased rows are read when the loop takes them, after the COMMIT: by then the ids have come back with it.
  if (lease)
    lease.rows = () =>
      rcpts.map((r, i) => ({ ...r, id: ids[i](), email_seq: seq, attempts: 0, first_attempt_at: null }));
  if (message) yield* insertMessage(ctx.db, seq, message(row.id));
  if (c.attachments.rows.length) yield* insertAttachments(ctx.db, seq, c.attachments.rows);
  const charged =
    credits > 0 &&
    (yield* charge(ctx.db, p.teamId, seq, credits, ctx.config.freeMonthlyCredits, row.created_at, prepared));
  if (credits > 0 && !charged) {
    const avail = yield* availableCreditsPlan(ctx, p.teamId);
    throw new ApiError(
      'insufficient_credits',
      'insufficient_credits',
      `This email needs ${credits} credits but only ${avail} are available.`,
    );
  }
  const email = { ...row, seq };
  if (lease) lease.email = email;
  yield* appendStatusEventPlan(ctx, email, 'queued', null, suppressed.length ? { suppressed } : {});
  return email;
}

/**
 * New recipients due now go straight to the delivery loop when it takes them (services/delivery.ts Intake):
 * inserted leased, handed over after the commit. Null: inserted unleased, for the loop's claims.
 */
function leaseNow(ctx: Ctx, kept: readonly { domain: string }[], dueNow: boolean) {
  const n = kept.length;
  const intake = n > 0 ? intakeOf(ctx.db) : undefined;
  const until = dueNow
    ? (intake?.reserve(
        n,
        kept.map((r) => r.domain),
      ) ?? null)
    : null;
  if (!intake || until === null) {
    intake?.notTaken();
    return null;
  }
  const lease = { until, rows: (): Claimed[] => [], email: null as emails.EmailRow | null };
  if (!afterCommit(ctx.db, (ok) => intake.hand(n, ok ? lease.email : null, ok ? lease.rows() : []))) {
    intake.hand(n, null, []);
    return null;
  }
  return lease;
}

export const checkInput = (ctx: Ctx, input: EmailInput) =>
  checkEmail(input, ctx.now(), { maxBytes: ctx.config.maxMessageBytes });

/**
 * Runs `insert` once per (team, mode, Idempotency-Key) within 24 hours: same key and request hash → the stored answer
 * (replayed); same key, other hash → 409. Only successful answers are stored. One group-commit transaction.
 */
export function idempotent<T>(
  ctx: Ctx,
  p: Principal,
  idemKey: string | undefined,
  request: unknown,
  insert: () => Gen<T>,
): Promise<{ body: T; replayed: boolean }> {
  if (idemKey !== undefined && (idemKey.length === 0 || idemKey.length > 255))
    return Promise.reject(invalid('Idempotency-Key', 'Idempotency-Key must be 1 to 255 characters.'));
  // One request of a group-commit turn (store/group-commit.ts), its plan run as it arrives.
  return groupPlan(ctx.db, () => idempotentPlan(ctx, p, idemKey, request, insert));
}

function* idempotentPlan<T>(
  ctx: Ctx,
  p: Principal,
  idemKey: string | undefined,
  request: unknown,
  insert: () => Gen<T>,
): Gen<{ body: T; replayed: boolean }> {
  const hash = idemKey === undefined ? '' : requestHash(request);
  if (idemKey !== undefined) {
    const prior = yield* getIdem(ctx.db, p, idemKey, ctx.now());
    if (prior && prior.request_hash !== hash)
      throw new ApiError(
        'idempotency_error',
        'idempotency_key_reused',
        'This Idempotency-Key was already used with a different request.',
      );
    if (prior) return { body: JSON.parse(prior.response_json) as T, replayed: true };
  }
  const body = yield* insert();
  if (idemKey !== undefined)
    yield* putIdem(ctx.db, p, {
      key: idemKey,
      request_hash: hash,
      status: 202,
      response_json: JSON.stringify(body),
      created_at: ctx.now(),
    });
  return { body, replayed: false };
}

/** POST /emails. Same Idempotency-Key and body → the original answer; other body → 409. */
export async function submitEmail(ctx: Ctx, p: Principal, input: EmailInput, idemKey?: string): Promise<SubmitResult> {
  const r = await idempotent(ctx, p, idemKey, input, function* () {
    return presentEmail(yield* insertChecked(ctx, p, checkInput(ctx, input)));
  });
  return { status: 202, ...r };
}

/** An email of the owner's team; a test key sees test emails only (a live one is 404 to it). */
function* ownEmail(ctx: Ctx, owner: Owner, id: string): Gen<emails.EmailRow> {
  const e = yield* emails.emailById(ctx.db, owner.teamId, id);
  if (!e || (owner.mode === 'test' && e.test_mode !== 1)) throw notFound('email');
  return e;
}
export const getEmail = (ctx: Ctx, owner: Owner, id: string): Promise<emails.EmailRow> =>
  runPlan(ctx.db, ownEmail(ctx, owner, id));

/**
 * Moves a queued email to canceled, refunding its credits (one transaction; PostgreSQL: on the pool with the other
 * holders of the team's credit lock, store/pg/plan-driver.ts runLocking).
 */
export const cancelEmail = (ctx: Ctx, owner: Owner, id: string): Promise<Email> =>
  runLocking(
    ctx.db,
    transaction(ctx.db, () => cancelPlan(ctx, owner, id)),
    { durable: true },
  );

function* cancelPlan(ctx: Ctx, owner: Owner, id: string): Gen<Email> {
  const teamId = owner.teamId;
  const e = yield* ownEmail(ctx, owner, id);
  if (e.status !== 'queued')
    throw new ApiError(
      'validation_error',
      'email_not_cancelable',
      `Only a queued email can be canceled; this one is ${e.status}.`,
    );
  if (yield* emails.emailInFlight(ctx.db, e.seq, ctx.now()))
    throw new ApiError(
      'validation_error',
      'email_not_cancelable',
      'This email is being handed to the receiving servers and can no longer be canceled.',
    );
  const pending = (yield* emails.deliveriesOf(ctx.db, e.seq)).filter((d) => d.status === 'queued');
  const after = yield* applyOutcomesPlan(
    ctx,
    e.seq,
    pending.map((d) => ({ deliveryId: d.id, event: 'canceled' as const, data: {} })),
  );
  if (e.test_mode === 0 && e.credits_charged > 0) {
    const n = yield* refund(ctx.db, teamId, e.seq, e.credits_charged, ctx.now());
    yield* emails.setCreditsCharged(ctx.db, e.seq, e.credits_charged - n);
  }
  return presentEmail((yield* emails.emailBySeq(ctx.db, after.seq))!);
}

// Cursors name a position (the last seq seen), signed (core/signed-token, purpose `cursor`) so a tampered one is refused.
function* cursorSigner(db: DB): Gen<TokenSigner> {
  return new TokenSigner('cursor', yield* secret(db, 'cursor'));
}
export function* encodeCursor(db: DB, kind: string, seq: number): Gen<string> {
  const body = `${kind}.${seq}`;
  return Buffer.from(`${body}.${(yield* cursorSigner(db)).mac(body)}`).toString('base64url');
}
export function* decodeCursor(db: DB, kind: string, cursor: string | undefined): Gen<number | null> {
  if (cursor === undefined) return null;
  const [k, seq, mac] = Buffer.from(cursor, 'base64url').toString().split('.');
  if (k !== kind || !/^\d+$/.test(seq ?? '') || !mac || !(yield* cursorSigner(db)).verify(`${k}.${seq}`, mac)) {
    throw invalid('cursor', 'The cursor is not one this service issued for this list.');
  }
  return Number(seq);
}

/** A page of a list: `limit` rows of `rows` (one more was read to tell whether more follow), and the next cursor. */
export function* page<T, R extends { seq: number }>(
  db: DB,
  kind: string,
  rows: R[],
  limit: number,
  present: (r: R) => T,
) {
  const has_more = rows.length > limit;
  const data = rows.slice(0, limit);
  return {
    object: 'list' as const,
    data: data.map(present),
    has_more,
    next_cursor: has_more ? yield* encodeCursor(db, kind, data[data.length - 1].seq) : null,
  };
}

/**
 * A test key lists test emails only, whatever its test_mode filter (test_mode=false: an empty list). A search (`q`)
 * looks at SEARCH_WINDOW emails a page (store/emails.ts), so its pages may hold fewer than `limit` with has_more.
 */
export const listEmails = (ctx: Ctx, owner: Owner, f: emails.EmailFilter, limit: number, cursor?: string) =>
  runPlan(ctx.db, listEmailsPlan(ctx, owner, f, limit, cursor));

function* listEmailsPlan(ctx: Ctx, owner: Owner, f: emails.EmailFilter, limit: number, cursor?: string) {
  const after = yield* decodeCursor(ctx.db, 'em', cursor);
  if (owner.mode === 'test' && f.testMode === false)
    return yield* page(ctx.db, 'em', [] as emails.EmailRow[], limit, presentEmail);
  const { rows, searchedTo } = yield* emails.listEmails(
    ctx.db,
    owner.teamId,
    owner.mode === 'test' ? { ...f, testMode: true } : f,
    after,
    limit,
  );
  const list = yield* page(ctx.db, 'em', rows, limit, presentEmail);
  // A search whose window ended before the team's oldest email: more to search from there, even on a short page.
  if (searchedTo === null || list.has_more) return list;
  return { ...list, has_more: true, next_cursor: yield* encodeCursor(ctx.db, 'em', searchedTo) };
}

export const listEvents = (ctx: Ctx, owner: Owner, id: string, limit: number, cursor?: string) =>
  runPlan(ctx.db, listEventsPlan(ctx, owner, id, limit, cursor));

function* listEventsPlan(ctx: Ctx, owner: Owner, id: string, limit: number, cursor?: string) {
  const e = yield* ownEmail(ctx, owner, id);
  const rows = yield* eventsOf(ctx.db, e.seq, yield* decodeCursor(ctx.db, 'evt', cursor), limit);
  return yield* page(ctx.db, 'evt', rows, limit, presentEvent);
}
