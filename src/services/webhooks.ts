// Use-cases on webhook endpoints (create, list, get, update, delete, rotate the secret), their outbox
// (the API's "webhook deliveries") and replays, and the outbox writer called inside every event's transaction.
// Mode: an endpoint takes its creator key's mode; a test key sees only test endpoints (others are 404).
import type { Resolver } from 'node:dns/promises';
import { ApiError, invalid, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { WEBHOOK_EVENT_TYPES } from '../core/status.js';
import type { DB } from '../store/db.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { emailHeadBySeq, type EmailHead } from '../store/emails.js';
import type { EventRow } from '../store/events.js';
import * as store from '../store/webhooks.js';
import { checkWebhookUrl } from '../core/webhook-address.js';
import { newSecret } from '../core/webhook-signing.js';
import { resolveAddresses } from './resolver.js';
import { Remembered } from './remembered.js';
import { decodeCursor, page } from './emails.js';
import { iso, presentEmail } from './present.js';
import type { Owner } from './keys.js';
import type { Ctx } from './context.js';

export const SECRET_OVERLAP_MS = 24 * 3600 * 1000;

export function presentEndpoint(e: store.EndpointRow, secret?: string) {
  return {
    object: 'webhook_endpoint' as const,
    id: e.id,
    mode: e.mode,
    url: e.url,
    events: e.events.split(' '),
    ...(secret ? { secret } : {}),
    enabled: e.enabled === 1,
    disabled_reason: e.disabled_reason,
    created_at: iso(e.created_at)!,
    updated_at: iso(e.updated_at)!,
  };
}

export function presentOutboxRow(d: store.OutboxRow, attempts: store.AttemptRow[]) {
  return {
    object: 'webhook_delivery' as const,
    id: d.id,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempt_count: d.attempts,
    next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    last_status_code: d.last_status_code,
    last_error: d.last_error,
    created_at: iso(d.created_at)!,
    completed_at: iso(d.completed_at),
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      status_code: a.status_code,
      response_snippet: a.response_snippet,
      error: a.error,
      duration_ms: a.duration_ms,
      next_retry_at: iso(a.next_retry_at),
      created_at: iso(a.created_at)!,
    })),
  };
}

export interface EndpointInput {
  url?: string;
  events?: string[];
  enabled?: boolean;
}

function checkEvents(events: string[]): string {
  if (events.length === 0) throw invalid('events', 'events must list at least one event kind.');
  const bad = events.find((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (bad !== undefined)
    throw invalid(
      'events',
      `Unknown event kind ${JSON.stringify(bad)}; known kinds: ${WEBHOOK_EVENT_TYPES.join(', ')}.`,
    );
  return [...new Set(events)].join(' ');
}

async function checkUrl(ctx: Ctx, resolver: Resolver, url: string): Promise<string> {
  const v = await checkWebhookUrl(url, ctx.config.allowPrivateWebhooks, (host) => resolveAddresses(resolver, host));
  if (!v.ok) throw invalid('url', v.reason!);
  return url;
}

export async function createEndpoint(
  ctx: Ctx,
  resolver: Resolver,
  owner: Owner,
  input: Required<Pick<EndpointInput, 'url' | 'events'>>,
) {
  const events = checkEvents(input.events);
  const url = await checkUrl(ctx, resolver, input.url);
  const now = ctx.now();
  const secret = newSecret();
  const row = {
    id: newId('wh', now),
    team_id: owner.teamId,
    mode: owner.mode,
    url,
    events,
    secret,
    enabled: 1,
    created_at: now,
    updated_at: now,
  };
  return runPlan(
    ctx.db,
    (function* () {
      const seq = yield* store.insertEndpoint(ctx.db, row);
      return presentEndpoint((yield* store.endpointBySeq(ctx.db, seq))!, secret);
    })(),
  );
}

function* endpointOf(ctx: Ctx, owner: Owner, id: string): Gen<store.EndpointRow> {
  const e = yield* store.endpointById(ctx.db, owner.teamId, id, owner.mode === 'test');
  if (!e) throw notFound('webhook');
  return e;
}
export const getEndpoint = (ctx: Ctx, owner: Owner, id: string) => runPlan(ctx.db, endpointOf(ctx, owner, id));

export const listEndpoints = (ctx: Ctx, owner: Owner, limit: number, cursor?: string) =>
  runPlan(ctx.db, listEndpointsPlan(ctx, owner, limit, cursor));
function* listEndpointsPlan(ctx: Ctx, owner: Owner, limit: number, cursor?: string) {
  const rows = yield* store.endpointsOfTeam(
    ctx.db,
    owner.teamId,
    owner.mode === 'test',
    yield* decodeCursor(ctx.db, 'wh', cursor),
    limit,
  );
  return yield* page(ctx.db, 'wh', rows, limit, (e) => presentEndpoint(e));
}

export async function updateEndpoint(ctx: Ctx, resolver: Resolver, owner: Owner, id: string, input: EndpointInput) {
  await getEndpoint(ctx, owner, id);
  const events = input.events === undefined ? undefined : checkEvents(input.events);
  const url = input.url === undefined ? undefined : await checkUrl(ctx, resolver, input.url);
  return runPlan(
    ctx.db,
    transaction(ctx.db, function* () {
      const e = yield* endpointOf(ctx, owner, id); // again: it may have changed while the URL was checked
      const enabled = input.enabled === undefined ? e.enabled : input.enabled ? 1 : 0;
      const now = ctx.now();
      yield* store.updateEndpoint(ctx.db, e.seq, { url: url ?? e.url, events: events ?? e.events, enabled, at: now });
      if (enabled === 0 && e.enabled === 1) yield* store.failPending(ctx.db, e.seq, 'endpoint disabled', now);
      return presentEndpoint((yield* store.endpointBySeq(ctx.db, e.seq))!);
    }),
  );
}

export function deleteEndpoint(ctx: Ctx, owner: Owner, id: string) {
  return runPlan(
    ctx.db,
    transaction(ctx.db, function* () {
      const e = yield* endpointOf(ctx, owner, id);
      yield* store.deleteEndpoint(ctx.db, e.seq);
      return { object: 'webhook_endpoint' as const, id: e.id, deleted: true };
    }),
  );
}

/** New secret, shown once; the old one keeps signing alongside for 24 hours. */
export function rotateEndpointSecret(ctx: Ctx, owner: Owner, id: string) {
  return runPlan(
    ctx.db,
    transaction(ctx.db, function* () {
      const e = yield* endpointOf(ctx, owner, id);
      const secret = newSecret();
      const now = ctx.now();
      yield* store.rotateSecret(ctx.db, e.seq, secret, now + SECRET_OVERLAP_MS, now);
      return presentEndpoint((yield* store.endpointBySeq(ctx.db, e.seq))!, secret);
    }),
  );
}

/** The secrets that sign an outbox row sent now: the current one, plus the previous one during the overlap. */
export function signingSecrets(e: store.EndpointRow, now: number): string[] {
  return e.old_secret && e.old_secret_expires_at !== null && now < e.old_secret_expires_at
    ? [e.secret, e.old_secret]
    : [e.secret];
}

export const listOutbox = (ctx: Ctx, owner: Owner, id: string, limit: number, cursor?: string) =>
  runPlan(ctx.db, listOutboxPlan(ctx, owner, id, limit, cursor));
function* listOutboxPlan(ctx: Ctx, owner: Owner, id: string, limit: number, cursor?: string) {
  const e = yield* endpointOf(ctx, owner, id);
  const rows = yield* store.outboxOfEndpoint(ctx.db, e.seq, yield* decodeCursor(ctx.db, 'whd', cursor), limit);
  const attempts = new Map<number, store.AttemptRow[]>();
  for (const d of rows.slice(0, limit)) attempts.set(d.seq, yield* store.attemptsOf(ctx.db, d.seq));
  return yield* page(ctx.db, 'whd', rows, limit, (d) => presentOutboxRow(d, attempts.get(d.seq)!));
}

/** Replays an outbox row's event (`rowId`: the API's delivery id): a new row with the same event id and payload, due now. */
export function replayOutboxRow(ctx: Ctx, owner: Owner, id: string, rowId: string) {
  return runPlan(
    ctx.db,
    transaction(ctx.db, function* () {
      const e = yield* endpointOf(ctx, owner, id);
      const d = yield* store.outboxRowById(ctx.db, e.seq, rowId);
      if (!d) throw notFound('webhook_delivery');
      if (e.enabled !== 1)
        throw new ApiError(
          'validation_error',
          'webhook_disabled',
          'This webhook endpoint is disabled; enable it first.',
        );
      const now = ctx.now();
      const seq = yield* store.insertOutboxRow(ctx.db, {
        id: newId('whd', now),
        endpoint_seq: e.seq,
        event_id: d.event_id,
        event_type: d.event_type,
        payload: d.payload,
        next_attempt_at: now,
        created_at: now,
      });
      return presentOutboxRow((yield* store.outboxRowBySeq(ctx.db, seq))!, []);
    }),
  );
}

/**
 * How long a team's enabled endpoints are used without reading them again: PostgreSQL, another node's change is seen
 * by then; SQLite, a change rolled back after it was read (an endpoint written in a group-commit turn that failed).
 */
const ENDPOINTS_TTL_MS = 1000;
const endpoints = new Remembered<readonly Pick<store.EndpointRow, 'seq' | 'events' | 'mode'>[]>({
  ttlMs: () => ENDPOINTS_TTL_MS,
  max: 10_000,
  keep: () => true,
  stamp: store.endpointsGeneration,
});
/**
 * A team's enabled endpoints, remembered for ENDPOINTS_TTL_MS. PostgreSQL: the read was a round trip in the
 * middle of every group-commit turn, which the turn's requests waited for; SQLite: a statement and its rows per event,
 * three per email (BENCHMARKS.md "Session 23"). Forgotten at once after a write of endpoints through this process
 * (store endpointsGeneration) and, on SQLite, after another connection's commit (the CLI: data_version); another
 * node's is seen within the TTL: an endpoint it created gets the events of emails accepted from then on, and one it
 * deleted or disabled gets no new rows (store queueOutboxRow checks).
 */
const enabledEndpoints = (db: DB, teamId: string) =>
  endpoints.getPlan(db, teamId, () => store.enabledEndpointsOfTeam(db, teamId));

/**
 * The onEvent listener: one outbox row per enabled endpoint of the team, of the email's mode, subscribed to the
 * event's kind, with the payload fixed now (from `known`, the email as the event's transaction leaves it). Runs
 * inside the event's transaction. Returns rows written (or, for an endpoint another node removed a moment ago,
 * meant to be).
 */
export function* enqueueEvent(ctx: Ctx, db: DB, ev: EventRow, known?: EmailHead): Gen<number> {
  const subscribed = (yield* enabledEndpoints(db, ev.team_id)).filter((e) => e.events.split(' ').includes(ev.type));
  if (subscribed.length === 0) return 0;
  // The writer's copy when it gave one: on PostgreSQL a read here was a round trip per event, in the middle of a
  // group-commit turn or a batch of results.
  const email = known ?? (yield* emailHeadBySeq(db, ev.email_seq));
  const mode = email?.test_mode === 1 ? 'test' : 'live';
  const targets = subscribed.filter((e) => e.mode === mode); // a test email's events go to test endpoints only
  if (targets.length === 0) return 0;
  const payload = JSON.stringify({
    id: ev.id,
    object: 'event',
    type: ev.type,
    created_at: iso(ev.created_at),
    data: { email: email ? presentEmail(email) : null, recipient: ev.recipient, details: JSON.parse(ev.data_json) },
  });
  const now = ctx.now();
  for (const t of targets) {
    yield* store.queueOutboxRow(db, {
      id: newId('whd', now),
      endpoint_seq: t.seq,
      event_id: ev.id,
      event_type: ev.type,
      payload,
      next_attempt_at: now,
      created_at: now,
    });
  }
  return targets.length;
}
