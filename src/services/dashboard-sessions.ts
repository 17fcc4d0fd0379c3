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
import { keyPrincipal, SCOPES, type Principal } from './keys.js';
import type { Ctx } from './context.js';

export const SESSION_TTL_MS = 12 * 3600 * 1000;

export interface Session {
  idHash: string;
  csrf: string;
  operator: boolean;
  principal: Principal;
  expiresAt: number;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const randomId = () => randomBytes(32).toString('base64url');

/** Starts a session (and drops expired ones); returns the id to put in the cookie. */
export function createSession(ctx: Ctx, s: { teamId: string; keyId: string | null; operator: boolean }): string {
  const id = randomId();
  const now = ctx.now();
  deleteExpiredSessions(ctx.db, now);
  insertSession(ctx.db, {
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
export function loadSession(ctx: Ctx, cookie: string | undefined): Session | null {
  if (!cookie || cookie.length > 100) return null;
  const idHash = sha256(cookie);
  const row = sessionByHash(ctx.db, idHash);
  if (!row) return null;
  let principal: Principal | null;
  if (row.operator === 1) principal = { keyId: 'operator', teamId: row.team_id, mode: 'live', scopes: new Set(SCOPES) };
  else principal = row.key_id ? keyPrincipal(ctx, row.key_id) : null;
  if (row.expires_at <= ctx.now() || !principal || principal.teamId !== row.team_id) {
    endSession(ctx, idHash);
    return null;
  }
  return { idHash, csrf: row.csrf, operator: row.operator === 1, principal, expiresAt: row.expires_at };
}

export const endSession = (ctx: Ctx, idHash: string): number => deleteSession(ctx.db, idHash);
/** Ends every session of a key (it was revoked); how many. */
export const endKeySessions = (ctx: Ctx, keyId: string): number => deleteKeySessions(ctx.db, keyId);
