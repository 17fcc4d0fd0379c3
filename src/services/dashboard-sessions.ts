// Dashboard sessions: a random id (the cookie value) stored hashed with an expiry and a per-session CSRF
// token. A key session acts as its API key and ends as soon as the key is revoked; cookies are http/'s business.
import { createHash, randomBytes } from 'node:crypto';
import {
  deleteExpiredSessions,
  deleteKeySessions,
  deleteSession,
  insertSession,
  sessionByHash,
} from '../store/dashboard-sessions.js';
import { teamById } from '../store/teams.js';
import { runPlan, type Gen } from '../store/op.js';
import { keyPrincipal, SCOPES, type Principal } from './keys.js';
import type { Ctx } from './context.js';

export const SESSION_TTL_MS = 12 * 3600 * 1000;

export interface Session {
  idHash: string;
  csrf: string;
  operator: boolean;
  principal: Principal;
  expiresAt: number;
  /** The team's name for the page header, read with the session (undefined once the team is gone). */
  teamName?: string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const randomId = () => randomBytes(32).toString('base64url');

/** Starts a session (and drops expired ones); returns the id to put in the cookie. */
export const createSession = (ctx: Ctx, s: { teamId: string; keyId: string | null; operator: boolean }) =>
  runPlan(ctx.db, createPlan(ctx, s));
function* createPlan(ctx: Ctx, s: { teamId: string; keyId: string | null; operator: boolean }): Gen<string> {
  const id = randomId();
  const now = ctx.now();
  yield* deleteExpiredSessions(ctx.db, now);
  yield* insertSession(ctx.db, {
    id_hash: sha256(id),
    team_id: s.teamId,
    key_id: s.keyId,
    operator: s.operator ? 1 : 0,
    csrf: randomId(),
    created_at: now,
    expires_at: now + SESSION_TTL_MS,
  });
  return id;
}

/** The live session named by the cookie value, or null (expired, unknown, or its key was revoked: then it is deleted). */
export const loadSession = (ctx: Ctx, cookie: string | undefined) => runPlan(ctx.db, loadPlan(ctx, cookie));
function* loadPlan(ctx: Ctx, cookie: string | undefined): Gen<Session | null> {
  if (!cookie || cookie.length > 100) return null;
  const idHash = sha256(cookie);
  const row = yield* sessionByHash(ctx.db, idHash);
  if (!row) return null;
  let principal: Principal | null;
  if (row.operator === 1) principal = { keyId: 'operator', teamId: row.team_id, mode: 'live', scopes: new Set(SCOPES) };
  else principal = row.key_id ? yield* keyPrincipal(ctx, row.key_id) : null;
  if (row.expires_at <= ctx.now() || !principal || principal.teamId !== row.team_id) {
    yield* deleteSession(ctx.db, idHash);
    return null;
  }
  const team = yield* teamById(ctx.db, row.team_id);
  return {
    idHash,
    csrf: row.csrf,
    operator: row.operator === 1,
    principal,
    expiresAt: row.expires_at,
    teamName: team?.name,
  };
}

export const endSession = (ctx: Ctx, idHash: string): Promise<number> => runPlan(ctx.db, deleteSession(ctx.db, idHash));
/** Ends every session of a key (it was revoked); how many. */
export const endKeySessions = (ctx: Ctx, keyId: string): Promise<number> =>
  runPlan(ctx.db, deleteKeySessions(ctx.db, keyId));
