// The PostgreSQL client's errors, and which of them say the database cannot be reached (./sync-client.ts then
// reconnects with back-off; the adapters answer 503 store_unavailable / 451 4.3.0: decisions.md "When the store
// fails").

export class PgError extends Error {
  code?: string;
  detail?: string;
  constraint?: string;
}

/** SQLSTATEs of a connection the server ended: admin_shutdown, crash_shutdown, cannot_connect_now (class 08 aside). */
const SHUTDOWN = new Set(['57P01', '57P02', '57P03']);
/**
 * Node's socket errors, and what `pg` and libpq say when the connection is gone without a SQLSTATE (pg: "Client has
 * encountered a connection error and is not queryable", a pooled connection the server ended between two statements).
 */
const SOCKET = /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)$/;
const LOST_TEXT =
  /connection (terminated|lost|is closed)|server closed the connection|no connection to the server|could not connect|cannot connect|terminating connection|did not answer within|Connection refused|connection error and is not queryable/i;

/**
 * Whether an error says the database cannot be reached (a lost or refused connection, a server shutting down), as
 * opposed to an error of the statement: class 08, 57P01-57P03, a socket error, or libpq's and `pg`'s words for a
 * connection gone. The store reconnects after such an error (SyncClient), and the adapters answer 503 / 451.
 */
export function isConnectionLoss(e: unknown): boolean {
  const { code, message } = (e ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && code !== '')
    return code.startsWith('08') || SHUTDOWN.has(code) || SOCKET.test(code) || code === UNREACHABLE;
  return typeof message === 'string' && LOST_TEXT.test(message);
}

/** The code of the error a statement fails with while the database cannot be reached (connection_failure). */
export const UNREACHABLE = '08006';
/** Back-off between two attempts to open a new connection: doubling from the first to the last. */
export const RECONNECT_FIRST_MS = 250;
export const RECONNECT_MAX_MS = 5000;

/** The error of a statement that could not reach the database. */
export function unreachable(reason: string): PgError {
  const e = new PgError(`the database cannot be reached (${reason}); retrying with back-off`);
  e.code = UNREACHABLE;
  return e;
}

/** A thrown transport error as a PgError (a connection error when it has no code of its own). */
export function lostError(e: unknown): PgError {
  if (e instanceof PgError) return e;
  const err = new PgError((e as Error)?.message ?? String(e));
  err.code = UNREACHABLE;
  return err;
}
