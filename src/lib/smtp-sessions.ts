// Limits on the sessions of an SMTP listener, shared by the inbound and the submission listeners: connections per
// client address, and sessions that last too long (a client that keeps its session alive with a command now and then,
// each one resetting the idle time-out, would otherwise hold one of the listener's slots for ever).
import type { SMTPServer, SMTPServerOptions } from 'smtp-server';
import { connectionsOf, type ServerConnection } from './internals.js';

export interface ReaperOptions {
  /** Longest session (ms). */
  maxMs: number;
  /** Longest a session may stay unauthenticated (ms; submission). Unset: no separate limit. */
  unauthenticatedMs?: number;
  /**
   * An authenticated session over `maxMs` is ended between two transactions only (not during MAIL…DATA, so the
   * message being sent is not lost), and at twice `maxMs` whatever it is doing.
   */
  betweenTransactions?: boolean;
}

/** In a transaction: MAIL FROM given and not yet ended by the message's reply (or RSET). */
function inTransaction(c: ServerConnection): boolean {
  return Boolean(c.session?.envelope?.mailFrom) || Boolean(c._dataStream);
}

function overdue(c: ServerConnection, age: number, o: ReaperOptions): boolean {
  const authenticated = Boolean(c.session?.user);
  if (!authenticated && o.unauthenticatedMs !== undefined && age > o.unauthenticatedMs) return true;
  if (age <= o.maxMs) return false;
  if (!o.betweenTransactions || !authenticated) return true;
  return !inTransaction(c) || age > 2 * o.maxMs;
}

/**
 * Ends sessions over their limits with `421 4.4.2 Session too long, closing`. Checks the server's sessions every so often
 * (a quarter of the shortest limit, 50 ms to 10 s); stop with clearInterval.
 */
export function sessionReaper(server: SMTPServer, o: ReaperOptions, now: () => number): NodeJS.Timeout {
  const started = new WeakMap<ServerConnection, number>();
  const shortest = Math.min(o.maxMs, o.unauthenticatedMs ?? Infinity);
  const timer = setInterval(
    () => {
      const t = now();
      for (const c of connectionsOf(server)) {
        const at = started.get(c);
        if (at === undefined) started.set(c, t);
        else if (overdue(c, t - at, o)) {
          c.send(421, '4.4.2 Session too long, closing');
          c.close();
        }
      }
    },
    Math.max(50, Math.min(10_000, shortest / 4)),
  );
  timer.unref();
  return timer;
}

/**
 * smtp-server onConnect: refuses with 421 a client address that already holds `limit` connections (the set holds this
 * one too; a closed connection leaves it at once).
 */
export function perAddressLimit(server: () => SMTPServer, limit: number): NonNullable<SMTPServerOptions['onConnect']> {
  return (session, cb) => {
    let n = 0;
    for (const c of connectionsOf(server())) if (c.remoteAddress === session.remoteAddress) n++;
    cb(
      n > limit
        ? Object.assign(new Error('4.7.0 Too many connections from your address'), { responseCode: 421 })
        : undefined,
    );
  };
}

/** How long sessions in a transaction get to finish when a listener stops. */
export const CLOSE_GRACE_MS = 10_000;

/** The reply to work arriving on an open session while the listener stops (decisions.md "When the store fails"). */
export const SHUTTING_DOWN = '4.3.2 Service shutting down, try again later';

/**
 * SIGTERM for an SMTP listener: no new connections; a session outside a transaction gets `421 4.3.2` at once, one in
 * a transaction at its next command (the hooks check `draining`) or once its message is answered; after `graceMs`
 * the rest get the same and are closed. smtp-server's own close() is not called before the sessions are gone: once
 * called, it answers every command `421 4.4.2`.
 */
export async function drainSessions(server: SMTPServer, graceMs: number): Promise<void> {
  draining.add(server);
  server.server.close(); // no new connections
  const told = new WeakSet<ServerConnection>();
  const tell = (c: ServerConnection) => {
    if (told.has(c)) return;
    told.add(c);
    c.send(421, SHUTTING_DOWN); // a 421 closes the connection
  };
  for (const end = Date.now() + graceMs; ; await new Promise((r) => setTimeout(r, 25))) {
    const open = [...connectionsOf(server)];
    for (const c of open) if (!inTransaction(c) || Date.now() >= end) tell(c);
    if (open.length === 0 || Date.now() >= end) break;
  }
  // Also ends sockets still in a TLS handshake; resolves once every connection is gone.
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

const draining = new WeakSet<SMTPServer>();

/** A MAIL FROM / RCPT TO hook that answers `421 4.3.2` once its listener is stopping (drainSessions). */
export function unlessDraining<A, S>(
  server: () => SMTPServer,
  hook: (arg: A, session: S, cb: (err?: Error | null) => void) => void,
): (arg: A, session: S, cb: (err?: Error | null) => void) => void {
  return (arg, session, cb) => {
    if (draining.has(server())) return cb(Object.assign(new Error(SHUTTING_DOWN), { responseCode: 421 }));
    hook(arg, session, cb);
  };
}
