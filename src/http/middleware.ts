// HTTP middleware: request id + access log, the error envelope for every failure,
// bearer authentication with scopes, and the per-key rate limit (the token buckets of ./rate-limit).
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { ApiError, invalid, type ErrorCode, type ErrorType } from '../core/errors.js';
import { jsonTooDeep, MAX_JSON_DEPTH } from './validate.js';
import { authenticate, requireScope, type Principal, type Scope } from '../services/keys.js';
import type { Ctx } from '../services/context.js';
import { RateLimiter } from './rate-limit.js';
import { hasBody, readBody, reserveBody } from './body.js';
import { BUSY_RETRY_AFTER, type BodyBudget } from '../services/body-budget.js';
import { isStoreUnavailable, noteStoreError, STORE_RETRY_AFTER } from '../services/store-health.js';

export { RateLimiter };

export interface State {
  requestId: string;
  principal?: Principal;
  retryAfter?: number;
  /** Set by a route taking a JSON array body (POST /emails/batch) before auth runs. */
  arrayBody?: boolean;
}
export type KoaCtx = Koa.ParameterizedContext<State>;

export function errorBody(docsUrl: string, type: ErrorType, code: string, message: string, param?: string) {
  return { error: { type, code, message, ...(param ? { param } : {}), doc_url: `${docsUrl}/errors#${code}` } };
}

/** A fault of the request itself from body parsing: an http-errors 4xx, or a body that does not decompress (zlib, brotli). */
export function clientFault(err: unknown): number | null {
  const e = err as { status?: unknown; code?: unknown };
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return e.status;
  return typeof e?.code === 'string' && /^(Z_|ERR__|ERR_BROTLI)/.test(e.code) ? 400 : null; // zlib / brotli
}

/** Turns any thrown error into the envelope; unknown faults become a logged 500 internal_error. */
export function errors(app: Ctx) {
  return async (ctx: KoaCtx, next: Koa.Next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined)
        throw new ApiError('not_found', 'route_not_found', `No route ${ctx.method} ${ctx.path}.`);
    } catch (err) {
      let e: ApiError;
      const fault = clientFault(err);
      if (err instanceof ApiError) e = err;
      else {
        if (fault === 413)
          e = new ApiError(
            'validation_error',
            'request_too_large',
            `The request body exceeds ${app.config.maxBodyBytes} bytes.`,
            undefined,
            413,
          );
        else if (fault !== null) e = new ApiError('validation_error', 'invalid_json', 'The body is not valid JSON.');
        else if (isStoreUnavailable(err)) {
          noteStoreError(app, err); // a SQLite store that cannot write: /healthz 503 (the access log has the 503)
          e = new ApiError(
            'api_error',
            'store_unavailable',
            'The store is unavailable; nothing was stored. Retry later.',
          );
        } else {
          app.log.error({ err, requestId: ctx.state.requestId }, 'unhandled error');
          noteStoreError(app, err);
          e = new ApiError('api_error', 'internal_error', 'An internal error occurred; retry with backoff.');
        }
      }
      ctx.status = e.status;
      ctx.body = errorBody(app.config.docsUrl, e.type, e.code, e.message, e.param);
      if (e.type === 'rate_limit_error') ctx.set('Retry-After', String(ctx.state.retryAfter ?? 1));
      if (e.code === 'server_busy') ctx.set('Retry-After', String(BUSY_RETRY_AFTER));
      if (e.code === 'store_unavailable') ctx.set('Retry-After', String(STORE_RETRY_AFTER));
    }
  };
}

export function requestLog(app: Ctx) {
  const log = app.log.child({ component: 'http' });
  return async (ctx: KoaCtx, next: Koa.Next) => {
    const start = process.hrtime.bigint();
    ctx.state.requestId = ctx.get('X-Request-Id').match(/^[\w.-]{1,64}$/)?.[0] ?? randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    try {
      await next();
    } finally {
      if (log.isLevelEnabled('debug') || ctx.status >= 500) {
        const ms = Number(process.hrtime.bigint() - start) / 1e6;
        // 503: load shed (server_busy), shutting down or the store unavailable, answered on purpose: a warning
        log[ctx.status === 503 ? 'warn' : ctx.status >= 500 ? 'error' : 'debug'](
          {
            requestId: ctx.state.requestId,
            method: ctx.method,
            path: ctx.path,
            status: ctx.status,
            ms,
            key: ctx.state.principal?.keyId,
          },
          'request',
        );
      }
    }
  };
}

/** Takes a token from `bucket` and sets the RateLimit-* headers; throws 429 when the bucket is empty. */
export function limit(ctx: KoaCtx, limiter: RateLimiter, bucket: string, who: string): void {
  const r = limiter.take(bucket);
  ctx.set('RateLimit-Limit', String(limiter.burst));
  ctx.set('RateLimit-Remaining', String(r.remaining));
  ctx.set('RateLimit-Reset', String(r.reset));
  if (!r.ok) {
    ctx.state.retryAfter = r.retryAfter;
    throw new ApiError(
      'rate_limit_error',
      'rate_limited',
      `Too many requests: at most ${limiter.rate} per second per ${who}.`,
    );
  }
}

/**
 * The bucket a request without a valid key takes from: its client address (the authentication back-off; the
 * dashboard's key sign-in takes from the same bucket, so failures on both surfaces count together).
 */
export const addressBucket = (address: string) => `ip:${address}`;

/**
 * Authenticates, checks the scope (if any) and applies the rate limit of the key. Requests without a
 * valid key count against their client address instead (so key guessing is throttled too).
 */
export function auth(app: Ctx, limiter: RateLimiter | null) {
  return (scope?: Scope) => async (ctx: KoaCtx, next: Koa.Next) => {
    let p: Principal;
    try {
      p = await authenticate(app, ctx.get('Authorization') || undefined);
    } catch (err) {
      if (limiter) limit(ctx, limiter, addressBucket(ctx.ip), 'client address without a valid key');
      throw err;
    }
    ctx.state.principal = p;
    if (limiter) limit(ctx, limiter, p.keyId, 'key');
    if (scope) requireScope(p, scope);
    await next();
  };
}

/** Under /v1, answers that no key was counted for (unknown routes) still carry RateLimit-* headers. */
export function unmatchedLimit(limiter: RateLimiter | null) {
  return async (ctx: KoaCtx, next: Koa.Next) => {
    try {
      await next();
    } finally {
      if (limiter && ctx.path.startsWith('/v1') && !ctx.response.get('RateLimit-Limit')) {
        try {
          limit(ctx, limiter, addressBucket(ctx.ip), 'client address');
        } catch {
          /* already answering; headers are set */
        }
      }
    }
  };
}

const badJson = (message: string, code: ErrorCode = 'invalid_json') => new ApiError('validation_error', code, message);

/** The JSON object (or, with `allowArray`, array) of a request body; nesting deeper than MAX_JSON_DEPTH is refused before anything is built. */
export function parseJsonObject(text: string, allowArray = false): Record<string, unknown> {
  if (text.trim() === '') return {};
  if (jsonTooDeep(text)) throw badJson(`The JSON body nests deeper than ${MAX_JSON_DEPTH} levels.`, 'json_too_deep');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw badJson('The body is not valid JSON.');
  }
  if (allowArray) {
    if (!Array.isArray(body)) throw badJson('The body must be a JSON array.');
    return body as unknown as Record<string, unknown>;
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw badJson('The body must be a JSON object.');
  return body as Record<string, unknown>;
}

/**
 * Reads the body of a POST/PUT/PATCH (at most `limitBytes`, Content-Type application/json) within the in-flight body
 * budget and parses it with parseJsonObject. Mounted after authentication and the rate limit, so anonymous bodies are
 * never read. The reservation is held until the route has answered (what was parsed lives that long) and released
 * on every path: answered, refused, failed, or the client gone.
 */
export function jsonBody(limitBytes: number, budget: BodyBudget) {
  return async (ctx: KoaCtx, next: Koa.Next) => {
    if (!['POST', 'PUT', 'PATCH'].includes(ctx.method)) return next();
    const json = ctx.is('application/json') !== false;
    if (Number(ctx.get('Content-Length') || 0) > 0 && !json)
      throw badJson('Send a JSON body with Content-Type: application/json.');
    if (!json || !hasBody(ctx.req)) {
      ctx.request.body = parseJsonObject('', ctx.state.arrayBody === true);
      return next();
    }
    const held = reserveBody(ctx.req, limitBytes, budget);
    try {
      ctx.request.body = parseJsonObject(await readBody(ctx.req, limitBytes, held), ctx.state.arrayBody === true);
      await next();
    } finally {
      held.release();
    }
  };
}

export const principal = (ctx: KoaCtx): Principal => ctx.state.principal!;

/** `limit` query parameter (1..100, default 20). */
export function limitOf(raw: string | undefined): number {
  if (raw === undefined) return 20;
  if (!/^\d{1,3}$/.test(raw) || Number(raw) < 1 || Number(raw) > 100)
    throw invalid('limit', 'limit must be an integer from 1 to 100.');
  return Number(raw);
}
