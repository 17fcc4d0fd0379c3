// The SMTP submission listener (a second smtp-server, never the inbound one): STARTTLS (and optional implicit TLS),
// AUTH PLAIN/LOGIN with an API key as password (plain text only from loopback), per-key rate limit, SIZE and
// connection limits; each message becomes an email through services/submission. Replies carry enhanced status codes.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { CLOSE_GRACE_MS, drainSessions, perAddressLimit, sessionReaper, unlessDraining } from '../lib/smtp-sessions.js';
import { ApiError } from '../core/errors.js';
import { authenticateSubmission, submitMessage, takeToken } from '../services/submission.js';
import { bodyBudget } from '../services/body-budget.js';
import { noteStoreError } from '../services/store-health.js';
import { mailboxOf, MAX_RECIPIENTS } from '../services/email-input.js';
import type { Principal } from '../services/keys.js';
import type { Ctx } from '../services/context.js';
import { replyFor, smtpError } from './replies.js';
import { listenError } from '../core/listen-error.js';
import { reloadTls, tlsOptions } from '../lib/smtp-tls.js';

export interface SubmissionListener {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGHUP: the certificate and key files read again for new sessions (src/lib/smtp-tls.ts). */
  reloadTls(): void;
  /** Bound addresses: the STARTTLS port, then the implicit-TLS one when configured. */
  addresses(): { name: string; address: AddressInfo }[];
}
interface SessionUser {
  principal: Principal;
  key: string;
}

/** Simultaneous connections in all, and from one client address. */
export const MAX_CLIENTS = 100;
export const MAX_CLIENTS_PER_IP = 10;
/** Longest a session may stay unauthenticated (ms). */
const UNAUTHENTICATED_MS = 60_000;

/** A message refused because the bodies being received at once fill the budget (MTA_MAX_INFLIGHT_BODY_BYTES). */
const busyReply = () =>
  smtpError(451, '4.3.2 The server is receiving too much mail at once; nothing was stored, try again in a moment');
/** The SIZE= a MAIL FROM declared (NaN when none). */
const sizeArg = (mailFrom: { args?: unknown } | false | undefined) =>
  Number((((mailFrom && mailFrom.args) || {}) as Record<string, string>).SIZE);

const isLoopback = (ip: string | undefined) => !!ip && /^(127\.|::1$|::ffff:127\.)/.test(ip);
const userOf = (s: SMTPServerSession) => s.user as unknown as SessionUser;

function onAuth(ctx: Ctx): NonNullable<SMTPServerOptions['onAuth']> {
  return (auth, session, cb) => {
    if (!session.secure && !isLoopback(session.remoteAddress))
      return cb(smtpError(538, '5.7.11 Encryption required: use STARTTLS before AUTH'));
    const key = auth.password ?? '';
    authenticateSubmission(ctx, key).then(
      (principal) => {
        const user: SessionUser = { principal, key };
        cb(null, { user: user as unknown as string });
      },
      (err) => {
        // Failed sign-ins count against the client's address, like requests without a valid key.
        const wait = takeToken(ctx, `ip:${session.remoteAddress}`);
        if (wait > 0) return cb(smtpError(454, `4.7.0 Too many failed attempts; try again in ${wait} s`));
        cb(replyFor(err));
      },
    );
  };
}

/** MAIL FROM: the key is still valid (revocation takes effect at once), its rate limit, and a declared SIZE. */
function onMailFrom(ctx: Ctx): NonNullable<SMTPServerOptions['onMailFrom']> {
  const max = ctx.config.maxMessageBytes;
  return (address, session, cb) => {
    const size = sizeArg(address);
    if (Number.isFinite(size) && size > max)
      return cb(smtpError(552, `5.3.4 Message exceeds fixed maximum message size ${max}`));
    if (Number.isFinite(size) && size > 0 && !bodyBudget(ctx).fits(size)) return cb(busyReply());
    authenticateSubmission(ctx, userOf(session).key).then(
      (p) => {
        const wait = takeToken(ctx, p.keyId);
        if (wait > 0) return cb(smtpError(451, `4.7.1 Rate limit of this key reached; try again in ${wait} s`));
        cb();
      },
      (err) => cb(replyFor(err)),
    );
  };
}

function onRcptTo(): NonNullable<SMTPServerOptions['onRcptTo']> {
  return (address, session, cb) => {
    if (session.envelope.rcptTo.length >= MAX_RECIPIENTS)
      return cb(smtpError(452, `4.5.3 Too many recipients (at most ${MAX_RECIPIENTS} per message)`));
    try {
      mailboxOf(address.address, 'to');
      cb();
    } catch {
      cb(smtpError(553, '5.1.3 Recipient address not accepted'));
    }
  };
}

/** Reads the message (refused past the maximum, 552, or past the in-flight body budget, 451) and stores it; the reply names the email. */
function onData(
  ctx: Ctx,
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  cb: (e?: Error | null, m?: string) => void,
) {
  const max = ctx.config.maxMessageBytes;
  const chunks: Buffer[] = [];
  let bytes = 0;
  // The budget is taken for the declared SIZE at once, and for what is read beyond it chunk by chunk; a message that
  // does not fit is read to its end and dropped. Released once the message is stored, refused or the client gone.
  const declared = sizeArg(session.envelope.mailFrom) || 0;
  const held = bodyBudget(ctx).reserve(declared > 0 && declared <= max ? declared : 0);
  let busy = held === null;
  stream.on('data', (c: Buffer) => {
    bytes += c.length;
    if (busy || bytes > max) return void (chunks.length = 0);
    if (bytes > held!.bytes && !held!.grow(bytes - held!.bytes)) {
      busy = true;
      chunks.length = 0;
      held!.release();
      return;
    }
    chunks.push(c);
  });
  stream.on('error', (err) => {
    held?.release();
    cb(err);
  });
  stream.on('end', () => {
    if (stream.sizeExceeded || bytes > max) {
      held?.release();
      return cb(smtpError(552, `5.3.4 Message exceeds fixed maximum message size ${max}`));
    }
    if (busy) return cb(busyReply());
    const rcpts = session.envelope.rcptTo.map((r) => r.address);
    submitMessage(ctx, userOf(session).principal, rcpts, Buffer.concat(chunks.splice(0), bytes))
      .finally(() => held!.release())
      .then(
        (r) => cb(null, `2.0.0 Ok: queued as ${r.id}`),
        (err) => {
          if (!(err instanceof ApiError)) {
            ctx.log.error({ err }, 'submitted message could not be stored');
            noteStoreError(ctx, err);
          }
          cb(replyFor(err));
        },
      );
  });
}

function createServer(ctx: Ctx, secure: boolean): SMTPServer {
  const server: SMTPServer = new SMTPServer({
    ...tlsOptions(ctx.config),
    secure,
    name: ctx.config.hostname,
    banner: 'ESMTP submission',
    size: ctx.config.maxMessageBytes,
    hideSize: true, // the limit is checked here, so that the reply carries 5.3.4
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: true, // onAuth refuses plain text from anything but loopback
    authRequiredMessage: '5.7.0 Authentication required',
    disableReverseLookup: true,
    maxClients: MAX_CLIENTS,
    socketTimeout: 60_000,
    closeTimeout: CLOSE_GRACE_MS,
    logger: false,
    onConnect: perAddressLimit(() => server, MAX_CLIENTS_PER_IP),
    onAuth: onAuth(ctx),
    onMailFrom: unlessDraining(() => server, onMailFrom(ctx)),
    onRcptTo: unlessDraining(() => server, onRcptTo()),
    onData: (stream, session, cb) => onData(ctx, stream, session, cb),
  });
  return server;
}

export function createSubmissionListener(ctx: Ctx): SubmissionListener {
  const log = ctx.log.child({ component: 'submission' });
  const { submissionHost: host, submissionPort, submissionsPort } = ctx.config;
  const servers = [{ name: 'submission', port: submissionPort, server: createServer(ctx, false) }];
  if (submissionsPort !== undefined)
    servers.push({ name: 'submissions', port: submissionsPort, server: createServer(ctx, true) });
  for (const s of servers) s.server.on('error', (err) => log.warn({ err }, 'submission SMTP error'));
  const listening = new Set<SMTPServer>();
  const listen = (s: SMTPServer, port: number, vars: string) =>
    new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => reject(listenError('SMTP submission', vars, host, port, err));
      s.server.once('error', fail);
      s.listen(port, host, () => {
        s.server.off('error', fail);
        listening.add(s);
        resolve();
      });
    });
  // A session must authenticate within a minute, and one older than MTA_SUBMISSION_MAX_SESSION_SECONDS is ended
  // between two messages (docs/submission.md).
  const maxMs = ctx.config.submissionMaxSessionSeconds * 1000;
  const limits = { maxMs, unauthenticatedMs: Math.min(UNAUTHENTICATED_MS, maxMs), betweenTransactions: true };
  const reapers: NodeJS.Timeout[] = [];
  let stopping: Promise<void> | null = null;
  return {
    start: async () => {
      for (const s of servers) await listen(s.server, s.port, `MTA_SUBMISSION_HOST, MTA_${s.name.toUpperCase()}_PORT`);
      for (const s of servers) reapers.push(sessionReaper(s.server, limits, ctx.now));
    },
    // Called twice at SIGTERM (quiesce, then stop): the second call waits for the first.
    stop: () =>
      (stopping ??= (async () => {
        for (const r of reapers.splice(0)) clearInterval(r);
        const open = [...listening];
        listening.clear();
        await Promise.all(open.map((s) => drainSessions(s, CLOSE_GRACE_MS)));
      })()),
    reloadTls: () =>
      reloadTls(
        servers.map((s) => s.server),
        ctx.config,
        log,
      ),
    addresses: () =>
      servers
        .filter((s) => listening.has(s.server))
        .map((s) => ({ name: s.name, address: s.server.server.address() as AddressInfo })),
  };
}
