// Reads a request body into one string within the in-flight body budget (services/body-budget.ts): the Content-Length
// is reserved before the first byte is read (refused at once, 503 server_busy, when it does not fit), and a body
// without one (chunked) or one that decompresses to more is reserved as it is read. The bytes go into a single buffer
// (one copy) and become one flat string; the caller releases the reservation when it is done with what it parsed.
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { ApiError } from '../core/errors.js';
import { serverBusy, type BodyBudget, type Reservation } from '../services/body-budget.js';

const tooLarge = (limit: number) =>
  new ApiError('validation_error', 'request_too_large', `The request body exceeds ${limit} bytes.`, undefined, 413);
const badBody = (message: string) => new ApiError('validation_error', 'invalid_json', message);

/** The decoded stream of a request (Content-Encoding gzip, deflate, br or identity), as koa-bodyparser accepted. */
function decoded(req: IncomingMessage): Readable {
  const enc = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (enc === 'identity') return req;
  const z =
    enc === 'gzip'
      ? zlib.createGunzip()
      : enc === 'deflate'
        ? zlib.createInflate()
        : enc === 'br'
          ? zlib.createBrotliDecompress()
          : null;
  if (!z) throw badBody(`Unsupported Content-Encoding ${enc}.`);
  req.on('error', (err) => z.destroy(err));
  return req.pipe(z);
}

/** Whether the request carries a body (a positive Content-Length or a Transfer-Encoding). */
export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Reserves the declared length (throws 413 past `limit`, 503 server_busy past the budget). */
export function reserveBody(req: IncomingMessage, limit: number, budget: BodyBudget): Reservation {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw tooLarge(limit);
  const held = budget.reserve(Number.isSafeInteger(declared) && declared > 0 ? declared : 0);
  if (!held) throw serverBusy();
  return held;
}

/**
 * The body as UTF-8 text, at most `limit` bytes decoded; bytes past the reservation are taken from the budget as they
 * come. Rejects when the client goes away (the caller's `finally` releases the reservation on every path).
 */
export function readBody(req: IncomingMessage, limit: number, held: Reservation): Promise<string> {
  const identity = (req.headers['content-encoding'] ?? 'identity').toLowerCase() === 'identity';
  const declared = Number(req.headers['content-length'] ?? NaN);
  const stream = decoded(req);
  return new Promise<string>((resolve, reject) => {
    let buf = Buffer.allocUnsafe(Math.min(held.bytes, limit));
    let n = 0;
    const fail = (err: Error) => {
      cleanup();
      if (stream !== req) stream.destroy();
      reject(err);
    };
    const onData = (c: Buffer) => {
      if (n + c.length > limit) return fail(tooLarge(limit));
      if (n + c.length > held.bytes && !held.grow(n + c.length - held.bytes)) return fail(serverBusy());
      if (n + c.length > buf.length) {
        const bigger = Buffer.allocUnsafe(Math.min(limit, Math.max(n + c.length, buf.length * 2)));
        buf.copy(bigger, 0, 0, n);
        buf = bigger;
      }
      c.copy(buf, n);
      n += c.length;
    };
    const onEnd = () => {
      cleanup();
      if (identity && Number.isFinite(declared) && n !== declared)
        return reject(badBody('The body is shorter than its Content-Length.'));
      const text = buf.toString('utf8', 0, n);
      buf = Buffer.alloc(0);
      resolve(text);
    };
    const onError = (err: Error) => fail(err);
    const onClose = () => {
      if (!req.complete) fail(new Error('the client closed the connection before its body was read'));
    };
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      req.off('close', onClose);
      req.off('error', onError);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
