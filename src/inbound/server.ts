// The inbound SMTP listener (smtp-server): accepts only VERP bounce addresses, fbl@ and dmarc@ on our bounce
// domains, postmaster@ and abuse@ (kept for the operator), never relays, no AUTH, SIZE-limited, a few connections
// per client address; each accepted message goes to recordFeedback (recordDmarcReport when sent to dmarc@,
// recordPostmasterMail when sent only to postmaster@/abuse@, recordReceived when sent to a team's receiving domain),
// read by a worker-thread pool within a time budget.
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import { CLOSE_GRACE_MS, drainSessions, perAddressLimit, sessionReaper, unlessDraining } from '../lib/smtp-sessions.js';
import { PARSE_CAP, RAW_CAP, recordFeedback, type InboundEnvelope, type ReadOptions } from '../services/feedback.js';
import type { Ctx } from '../services/context.js';
import { recordDmarcReport } from '../services/dmarc-reports.js';
import { recordPostmasterMail } from '../services/postmaster-mail.js';
import { recordReceived } from '../services/receiving.js';
import type { MailReading, MailUnread } from '../core/inbound-mail.js';
import type { DmarcParser } from '../core/dmarc-report.js';
import { decideRecipient, type RcptDecision } from './recipients.js';
import { createParsePool, type ParsePool } from './parse-pool.js';
import { listenError } from '../core/listen-error.js';
import { reloadTls, tlsOptions } from '../lib/smtp-tls.js';

export interface InboundListener {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGHUP: the certificate and key files read again for new sessions (src/lib/smtp-tls.ts). */
  reloadTls(): void;
  address(): AddressInfo | null;
}

function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

/** Bytes of a message kept in memory: what the parser reads and the operator's copy; the rest is counted, not kept. */
const KEEP_BYTES = Math.max(PARSE_CAP, RAW_CAP);
/**
 * Bytes kept of a message sent to dmarc@: a compressed aggregate report is the whole message, so it gets more
 * (a larger one is read as `truncated` and kept for the operator). Its XML is capped again after decompression.
 */
export const DMARC_KEEP_BYTES = 1024 * 1024;

type Route = 'dmarc' | 'postmaster' | 'feedback' | 'receiving';
type Kind = Extract<RcptDecision, { ok: true }>['kind'];
/** The kind of each recipient accepted, by the transaction's envelope (smtp-server makes a new one at RSET/MAIL). */
const accepted = new WeakMap<object, Map<string, Kind>>();
function noteAccepted(session: SMTPServerSession, address: string, kind: Kind): void {
  const m = accepted.get(session.envelope) ?? new Map<string, Kind>();
  accepted.set(session.envelope, m.set(address, kind));
}
/**
 * Where the message goes: an aggregate report when sent to dmarc@ (a message to it and to fbl@ is read as a report),
 * received for the teams when sent to a receiving domain (its other recipients, ours, are then not read), kept for the
 * operator when sent to postmaster@/abuse@ only, else read as a bounce or complaint.
 */
function routeOf(session: SMTPServerSession): Route {
  const decided = accepted.get(session.envelope);
  const kinds = session.envelope.rcptTo.map((r) => decided?.get(r.address) ?? null);
  if (kinds.includes('dmarc')) return 'dmarc';
  if (kinds.includes('receiving')) return 'receiving';
  return kinds.length > 0 && kinds.every((k) => k === 'postmaster') ? 'postmaster' : 'feedback';
}

type Readers = ReadOptions & {
  parseDmarc: DmarcParser;
  parseMail: (raw: Buffer) => Promise<MailReading | MailUnread>;
};

/** Where a message goes once read: recordDmarcReport for dmarc@, recordPostmasterMail, else recordFeedback; the 250 text. */
async function record(
  ctx: Ctx,
  read: Readers,
  route: Route,
  raw: Buffer,
  env: InboundEnvelope & { helo: string | null },
  size: number,
) {
  if (route === 'receiving') return receive(ctx, read, raw, env);
  if (route === 'postmaster') return `2.0.0 Message ${(await recordPostmasterMail(ctx, raw, env, size)).id} received`;
  if (route === 'feedback')
    return recordFeedback(ctx, raw, env, { ...read, size }).then((r) => `2.0.0 Report ${r.id} received`);
  return recordDmarcReport(ctx, raw, env, { parse: read.parseDmarc, size }).then(
    (r) => `2.0.0 DMARC report ${r.id ? r.id + ' ' : ''}received`,
  );
}

/** A message to a team's receiving domain: stored and posted as `inbound.received`; 550 when it cannot be read. */
async function receive(ctx: Ctx, read: Readers, raw: Buffer, env: InboundEnvelope & { helo: string | null }) {
  const ids = await recordReceived(ctx, raw, env, read);
  if (!ids) throw smtpError(550, '5.6.0 Message could not be read within the time allowed');
  return `2.0.0 Message ${ids.join(' ')} received`;
}

/** Reads the message, refusing it past the limit (552) and answering 451 when it cannot be recorded. */
function onData(
  ctx: Ctx,
  read: Readers,
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  callback: (err?: Error | null, message?: string) => void,
) {
  const max = ctx.config.inboundMaxBytes;
  let answered = false;
  const done = (err: Error | null, message?: string) => {
    if (!answered) {
      answered = true;
      callback(err, message);
    }
  };
  const chunks: Buffer[] = [];
  let bytes = 0;
  const route = routeOf(session);
  // received mail is kept whole (its raw copy is served), up to MTA_INBOUND_MAX_BYTES
  const keep = route === 'receiving' ? max : route === 'dmarc' ? DMARC_KEEP_BYTES : KEEP_BYTES;
  stream.on('data', (c: Buffer) => {
    if (bytes < keep) chunks.push(bytes + c.length > keep ? c.subarray(0, keep - bytes) : c);
    bytes += c.length;
  });
  stream.on('error', (err) => done(err));
  stream.on('end', () => {
    if (stream.sizeExceeded || bytes > max)
      return done(smtpError(552, `5.3.4 Message exceeds fixed maximum message size ${max}`));
    const env = {
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
      rcptTo: session.envelope.rcptTo.map((r) => r.address),
      remoteIp: session.remoteAddress ?? null,
      helo: session.hostNameAppearsAs || null,
    };
    record(ctx, read, route, Buffer.concat(chunks), env, bytes).then(
      (message) => done(null, message),
      (err: Error & { responseCode?: number }) => {
        if (err.responseCode) return done(err);
        ctx.log.error({ err }, 'inbound report could not be recorded');
        done(smtpError(451, '4.3.0 Temporary failure, try again later'));
      },
    );
  });
}

/** Simultaneous connections one client address may hold (one client once held all 100 slots). */
export const DEFAULT_MAX_CLIENTS_PER_IP = 5;

/** The listener's report parser: a worker-thread pool from start() to stop(). */
function parserFor(ctx: Ctx, log: Ctx['log']) {
  let pool: ParsePool | null = null;
  return {
    start() {
      pool = createParsePool({
        timeoutMs: ctx.config.inboundParseTimeoutMs,
        onAbandon: (why, detail) =>
          log.warn({ why, detail }, 'inbound report not read; stored for the operator, changes nothing'),
      });
    },
    stop: async () => {
      await pool?.close();
      pool = null;
    },
    parse: (raw: Buffer) => (pool ? pool.parse(raw) : Promise.reject(new Error('inbound listener is not running'))),
    parseDmarc: (raw: Buffer, truncated: boolean) =>
      pool ? pool.parseDmarc(raw, truncated) : Promise.reject(new Error('inbound listener is not running')),
    // a received message may be large: its budget grows by 100 ms per MB (20 MB: 2 s more)
    parseMail: (raw: Buffer) =>
      pool
        ? pool.parseMail(raw, (ctx.config.inboundParseTimeoutMs ?? 2000) + Math.ceil(raw.length / 10_000))
        : Promise.reject(new Error('inbound listener is not running')),
  };
}

export function createInboundListener(ctx: Ctx): InboundListener {
  const max = ctx.config.inboundMaxBytes;
  const log = ctx.log.child({ component: 'inbound' });
  const parser = parserFor(ctx, log);
  const server: SMTPServer = new SMTPServer({
    ...tlsOptions(ctx.config),
    name: ctx.config.hostname,
    banner: 'mail receiver',
    size: max,
    rejectOversized: true,
    authOptional: true,
    disabledCommands: ['AUTH'],
    disableReverseLookup: true,
    maxClients: ctx.config.inboundMaxClients ?? 100,
    maxRecipients: 50,
    socketTimeout: 60_000,
    closeTimeout: CLOSE_GRACE_MS,
    logger: false,
    onMailFrom: unlessDraining(
      () => server,
      (address: SMTPServerAddress, _session: SMTPServerSession, cb: (err?: Error | null) => void) => {
        const size = Number(address.args && (address.args as Record<string, string>).SIZE);
        if (Number.isFinite(size) && size > max)
          return cb(smtpError(552, `5.3.4 Message exceeds fixed maximum message size ${max}`));
        cb();
      },
    ),
    onRcptTo: unlessDraining(
      () => server,
      (address: SMTPServerAddress, session: SMTPServerSession, cb: (err?: Error | null) => void) => {
        decideRecipient(ctx, address.address).then((d) => {
          if (!d.ok) log.debug({ rcpt: address.address, code: d.code }, 'recipient refused');
          else noteAccepted(session, address.address, d.kind);
          cb(d.ok ? undefined : smtpError(d.code, d.message));
        }, cb);
      },
    ),
    onConnect: perAddressLimit(() => server, ctx.config.inboundMaxClientsPerIp ?? DEFAULT_MAX_CLIENTS_PER_IP),
    onData: (stream, session, cb) =>
      onData(
        ctx,
        { parse: parser.parse, parseDmarc: parser.parseDmarc, parseMail: parser.parseMail },
        stream,
        session,
        cb,
      ),
  });
  server.on('error', (err) => log.warn({ err }, 'inbound SMTP error'));
  const reaper = sessionReaper(server, { maxMs: ctx.config.inboundMaxSessionSeconds * 1000 }, ctx.now);
  let listening = false;
  let stopping: Promise<void> | null = null;
  return {
    start: () =>
      new Promise<void>((resolve, reject) => {
        const { smtpHost: host, smtpPort: port } = ctx.config;
        const fail = (err: Error) =>
          reject(listenError('inbound SMTP', 'MTA_SMTP_HOST, MTA_SMTP_PORT', host, port, err));
        server.server.once('error', fail);
        server.listen(port, host, () => {
          server.server.off('error', fail);
          listening = true;
          parser.start();
          resolve();
        });
      }),
    // Called twice at SIGTERM (quiesce, then stop): the second call waits for the first.
    stop: () =>
      (stopping ??= (async () => {
        clearInterval(reaper);
        if (listening) {
          listening = false;
          await drainSessions(server, CLOSE_GRACE_MS);
        }
        await parser.stop();
      })()),
    reloadTls: () => reloadTls([server], ctx.config, log),
    address: () => (listening ? (server.server.address() as AddressInfo) : null),
  };
}
