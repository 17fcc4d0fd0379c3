// Teams and API keys: creation (the full key is returned once), authentication by hash,
// scopes, the 20-active-keys limit, revocation (effective on the next request) and the mode rule:
// a test key sees only test-mode things (emails, keys, endpoints) and changes no domain.
import { hash, randomBytes } from 'node:crypto';
import { ApiError, invalid, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { runPooled } from '../store/pg/plan-driver.js';
import { Remembered } from './remembered.js';
import * as store from '../store/teams.js';
import type { Ctx } from './context.js';

export const SCOPES = [
  'emails:send',
  'emails:read',
  'domains:read',
  'domains:write',
  'webhooks:write',
  'keys:write',
] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPES: Scope[] = ['emails:send', 'emails:read', 'domains:read'];
export const MAX_ACTIVE_KEYS = 20;

export interface Principal {
  keyId: string;
  teamId: string;
  mode: 'test' | 'live';
  scopes: ReadonlySet<string>;
}
/** Who is looking: a team, through a key of a mode. A test owner sees only test-mode objects; a live one sees both. */
export type Owner = Pick<Principal, 'teamId' | 'mode'>;

/** Refuses a test key an action that changes live state (domains): 403 test_key_not_allowed. */
export function requireLive(p: Owner, action: string): void {
  if (p.mode !== 'live')
    throw new ApiError('permission_error', 'test_key_not_allowed', `A test key cannot ${action}; use a live key.`);
}

// One-shot hash (Node >= 20.12): ~0.3 µs a key where a Hash object took ~1.3 (every API request hashes its key).
export const hashKey = (key: string) => hash('sha256', key, 'hex');

export const createTeam = (ctx: Ctx, name: string) => runPlan(ctx.db, createTeamPlan(ctx, name));
/** createTeam as a plan (test fixtures and benches run it with runSync). */
export function* createTeamPlan(ctx: Ctx, name: string): Gen<store.TeamRow> {
  if (!name || name.length > 200) throw invalid('name', 'A team name of 1 to 200 characters is required.');
  if (yield* store.teamByName(ctx.db, name))
    throw invalid('name', `A team named ${JSON.stringify(name)} already exists.`, 'team_exists');
  const team = { id: newId('team', ctx.now()), name, created_at: ctx.now() };
  yield* store.insertTeam(ctx.db, team);
  return team;
}

export const teamNamed = (ctx: Ctx, name: string) => runPlan(ctx.db, teamNamedPlan(ctx, name));
/** The team of that name, else of that id; 404 without one. */
export function* teamNamedPlan(ctx: Ctx, name: string): Gen<store.TeamRow> {
  const t = (yield* store.teamByName(ctx.db, name)) ?? (yield* store.teamById(ctx.db, name));
  if (!t) throw notFound('team');
  return t;
}

type KeyOptions = { mode?: 'test' | 'live'; scopes?: string[]; name?: string | null };

export const createKey = (ctx: Ctx, teamId: string, opts: KeyOptions) =>
  runPlan(ctx.db, createKeyPlan(ctx, teamId, opts));
/** createKey as a plan (test fixtures and benches run it with runSync). */
export function* createKeyPlan(ctx: Ctx, teamId: string, opts: KeyOptions) {
  const mode = opts.mode ?? 'test';
  if (mode !== 'test' && mode !== 'live') throw invalid('mode', 'mode must be "test" or "live".');
  const scopes = opts.scopes ?? DEFAULT_SCOPES;
  const bad = scopes.find((s) => !(SCOPES as readonly string[]).includes(s));
  if (bad !== undefined)
    throw invalid('scopes', `Unknown scope ${JSON.stringify(bad)}; known scopes: ${SCOPES.join(', ')}.`);
  const key = `ps_${mode}_${randomBytes(24).toString('base64url')}`;
  const row: store.KeyRow = {
    id: newId('key', ctx.now()),
    team_id: teamId,
    name: opts.name ?? null,
    mode,
    scopes: [...new Set(scopes)].join(' '),
    hash: hashKey(key),
    prefix: key.slice(0, 12),
    created_at: ctx.now(),
    last_used_at: null,
    revoked_at: null,
  };
  yield* transaction(ctx.db, function* () {
    if ((yield* store.activeKeyCount(ctx.db, teamId)) >= MAX_ACTIVE_KEYS) {
      throw new ApiError(
        'validation_error',
        'key_limit_reached',
        `A team may hold at most ${MAX_ACTIVE_KEYS} active keys; revoke one first.`,
      );
    }
    yield* store.insertKey(ctx.db, row);
  });
  return { row, key };
}

/**
 * Creates a key on behalf of another key (API, dashboard): no escalation. A test key makes only test
 * keys, and a key grants only scopes it holds itself. The operator's CLI uses createKey directly.
 */
export const createKeyAs = (ctx: Ctx, p: Principal, opts: KeyOptions) => runPlan(ctx.db, createKeyAsPlan(ctx, p, opts));
function* createKeyAsPlan(ctx: Ctx, p: Principal, opts: KeyOptions) {
  if ((opts.mode ?? 'test') === 'live' && p.mode !== 'live') {
    throw new ApiError(
      'permission_error',
      'missing_scope',
      'A test key cannot create live keys; use a live key or `mta key create --mode live`.',
      'mode',
    );
  }
  const beyond = (opts.scopes ?? DEFAULT_SCOPES).filter(
    (s) => !p.scopes.has(s) && (SCOPES as readonly string[]).includes(s),
  );
  if (beyond.length)
    throw new ApiError(
      'permission_error',
      'missing_scope',
      `A key can only grant scopes it holds itself; this one lacks ${beyond.join(', ')}.`,
      'scopes',
    );
  return yield* createKeyPlan(ctx, p.teamId, opts);
}

const lastTouch = new Map<string, number>();

/**
 * Keys read by hash are remembered for KEY_CACHE_MS (a query, on PostgreSQL a round trip, saved on every request).
 * A key revoked through this process is forgotten at once (revokeKey). SQLite: a write by another connection (the
 * CLI's `mta key revoke`) changes the file's data_version, and the whole cache is dropped at the next request.
 * PostgreSQL: one revoked by another node or by the CLI stops working here within KEY_CACHE_MS
 * (docs/operations.md). Only hashes are kept, at most 1,000 (services/remembered.ts).
 */
export const KEY_CACHE_MS = 2000;
const keys = new Remembered<store.KeyRow | undefined>({
  ttlMs: () => KEY_CACHE_MS,
  max: 1000,
  keep: (row) => row !== undefined && row.revoked_at === null,
});

/**
 * The principal of a bearer key, or an authentication error. Revoked keys fail at once. On every request's path: its
 * key read is remembered (KEY_CACHE_MS), so most requests run no statement; the others read it, and touch its
 * last use once a minute, on the pool on PostgreSQL (the event loop goes on), at once underneath elsewhere.
 */
export async function authenticate(ctx: Ctx, header: string | undefined): Promise<Principal> {
  if (!header)
    throw new ApiError(
      'authentication_error',
      'missing_api_key',
      'No API key given: send "Authorization: Bearer <API_KEY>".',
    );
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m)
    throw new ApiError(
      'authentication_error',
      'missing_api_key',
      'Malformed Authorization header: expected "Bearer <API_KEY>".',
    );
  const hash = hashKey(m[1]);
  const row = await keys.getAsync(ctx.db, hash, () => runPooled(ctx.db, store.keyByHash(ctx.db, hash), 'other'));
  if (!row || row.revoked_at !== null)
    throw new ApiError('authentication_error', 'invalid_api_key', 'The API key is unknown or revoked.');
  const now = ctx.now();
  if ((lastTouch.get(row.id) ?? 0) < now - 60_000) {
    lastTouch.set(row.id, now);
    await runPooled(ctx.db, store.touchKey(ctx.db, row.id, now), 'other');
  }
  return { keyId: row.id, teamId: row.team_id, mode: row.mode, scopes: new Set(row.scopes.split(' ')) };
}

/** The one scope check: 403 missing_scope. The API (http/middleware auth) and the dashboard (a session acts as its key) both call it. */
export function requireScope(p: Principal, scope: Scope): void {
  if (!p.scopes.has(scope))
    throw new ApiError('permission_error', 'missing_scope', `This key lacks the scope "${scope}".`);
}

/** Revokes a key; with an owner (API, dashboard), only a key that owner sees (a test key: test keys of its team). */
export const revokeKey = (ctx: Ctx, keyId: string, owner?: Owner) => runPlan(ctx.db, revokePlan(ctx, keyId, owner));
function* revokePlan(ctx: Ctx, keyId: string, owner?: Owner): Gen<store.KeyRow> {
  const row = yield* store.keyById(ctx.db, keyId);
  if (!row || (owner !== undefined && (row.team_id !== owner.teamId || (owner.mode === 'test' && row.mode !== 'test'))))
    throw notFound('api_key');
  keys.forget(ctx.db, row.hash);
  yield* store.revokeKey(ctx.db, keyId, ctx.now());
  const revoked = (yield* store.keyById(ctx.db, keyId))!;
  // Again once written (autocommitted; on the pool the other requests went on meanwhile): a read of the key made on
  // another connection before then is not remembered.
  keys.forget(ctx.db, row.hash);
  return revoked;
}

/** The team's keys the owner sees: all of them for a live key, test keys only for a test key. */
export const listKeys = (ctx: Ctx, owner: Owner) => runPlan(ctx.db, listKeysPlan(ctx, owner));
function* listKeysPlan(ctx: Ctx, owner: Owner) {
  return (yield* store.keysOfTeam(ctx.db, owner.teamId)).filter((k) => owner.mode === 'live' || k.mode === 'test');
}

/** The principal of an API key by id while it is active (not revoked), else null. Used by dashboard sessions. */
export function* keyPrincipal(ctx: Ctx, keyId: string): Gen<Principal | null> {
  const row = yield* store.keyById(ctx.db, keyId);
  if (!row || row.revoked_at !== null) return null;
  return { keyId: row.id, teamId: row.team_id, mode: row.mode, scopes: new Set(row.scopes.split(' ')) };
}
