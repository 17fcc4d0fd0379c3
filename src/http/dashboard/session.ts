// Dashboard session cookies (the sessions themselves live in services/dashboard-sessions.ts): names,
// HttpOnly/SameSite/Secure attributes, reading a cookie value, and constant-time secret comparison.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Ctx } from '../../services/context.js';
import type { KoaCtx } from '../middleware.js';

export {
  createSession,
  loadSession,
  endSession,
  endKeySessions,
  SESSION_TTL_MS,
  type Session,
} from '../../services/dashboard-sessions.js';

export const SESSION_COOKIE = 'mta_session';
export const LOGIN_CSRF_COOKIE = 'mta_login_csrf';

export const token = () => randomBytes(32).toString('base64url');

/** Constant-time string comparison (via hashes, so lengths may differ). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/**
 * Sets a cookie through Koa's ctx.cookies, scoped to /dashboard: HttpOnly, SameSite=Lax, Secure when the
 * public URL is https (also behind a proxy that speaks plain HTTP to us), expiring after `maxAgeSec`.
 */
export function setCookie(app: Ctx, k: KoaCtx, name: string, value: string, maxAgeSec: number) {
  const secure = app.config.publicUrl.startsWith('https:');
  if (secure) k.cookies.secure = true; // the cookies module refuses a Secure cookie on a plain connection otherwise
  k.cookies.set(name, value, {
    path: '/dashboard',
    maxAge: maxAgeSec * 1000,
    httpOnly: true,
    sameSite: 'lax',
    secure,
    overwrite: true,
  });
}
/** Expires a cookie now (an empty value: the cookies module writes an expiry in 1970). */
export const clearCookie = (app: Ctx, k: KoaCtx, name: string) => setCookie(app, k, name, '', 0);

export function readCookie(k: KoaCtx, name: string): string | undefined {
  const v = k.cookies.get(name);
  return v && /^[\w-]{1,100}$/.test(v) ? v : undefined;
}
