// Dashboard sessions: a random id in an HttpOnly cookie, stored hashed with an expiry; a per-session
// CSRF token. A key session acts as its API key and ends as soon as the key is revoked.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from '../../store/db.js';
import { keyPrincipal, SCOPES, type Principal } from '../../services/keys.js';
import type { Ctx } from '../../services/context.js';
import type { KoaCtx } from '../middleware.js';

export const SESSION_COOKIE = 'mta_session';
export const LOGIN_CSRF_COOKIE = 'mta_login_csrf';
export const SESSION_TTL_MS = 12 * 3600 * 1000;

interface SessionRow { id_hash: string; team_id: string; key_id: string | null; operator: number; csrf: string; created_at: number; expires_at: number }
export interface Session { idHash: string; csrf: string; operator: boolean; principal: Principal; expiresAt: number }

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
export const token = () => randomBytes(32).toString('base64url');

/** Constant-time string comparison (via hashes, so lengths may differ). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export function createSession(ctx: Ctx, s: { teamId: string; keyId: string | null; operator: boolean }): string {
  const id = token();
  const now = ctx.now();
  sql(ctx.db, 'DELETE FROM dashboard_sessions WHERE expires_at <= ?').run(now);
  sql(ctx.db, `INSERT INTO dashboard_sessions (id_hash, team_id, key_id, operator, csrf, created_at, expires_at)
    VALUES (?, ?, ?, ?, ?, ?, ?)`).run(sha256(id), s.teamId, s.keyId, s.operator ? 1 : 0, token(), now, now + SESSION_TTL_MS);
  return id;
}

/** The live session named by the cookie value, or null (expired, unknown, or its key was revoked: then it is deleted). */
export function loadSession(ctx: Ctx, cookie: string | undefined): Session | null {
  if (!cookie || cookie.length > 100) return null;
  const idHash = sha256(cookie);
  const row = sql<SessionRow>(ctx.db, 'SELECT * FROM dashboard_sessions WHERE id_hash = ?').get(idHash);
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

export const endSession = (ctx: Ctx, idHash: string) => sql(ctx.db, 'DELETE FROM dashboard_sessions WHERE id_hash = ?').run(idHash);
export const endKeySessions = (ctx: Ctx, keyId: string) => sql(ctx.db, 'DELETE FROM dashboard_sessions WHERE key_id = ?').run(keyId).changes;

/**
 * Sets a cookie through Koa's ctx.cookies, scoped to /dashboard: HttpOnly, SameSite=Lax, Secure when the
 * public URL is https (also behind a proxy that speaks plain HTTP to us), expiring after `maxAgeSec`.
 */
export function setCookie(app: Ctx, k: KoaCtx, name: string, value: string, maxAgeSec: number) {
  const secure = app.config.publicUrl.startsWith('https:');
  if (secure) k.cookies.secure = true; // the cookies module refuses a Secure cookie on a plain connection otherwise
  k.cookies.set(name, value, { path: '/dashboard', maxAge: maxAgeSec * 1000, httpOnly: true, sameSite: 'lax', secure, overwrite: true });
}
/** Expires a cookie now (an empty value: the cookies module writes an expiry in 1970). */
export const clearCookie = (app: Ctx, k: KoaCtx, name: string) => setCookie(app, k, name, '', 0);

export function readCookie(k: KoaCtx, name: string): string | undefined {
  const v = k.cookies.get(name);
  return v && /^[\w-]{1,100}$/.test(v) ? v : undefined;
}
