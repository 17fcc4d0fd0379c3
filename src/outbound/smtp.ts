// SMTP client side: a pool of nodemailer SMTPConnections per pool key ((source IP, site) lane, or MX address
// and source address) (reused for several messages, RSET after a failed transaction, closed after N messages or when idle) and
// one transaction → a Verdict per recipient. Never throws; every wait is bounded by time-outs.
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { rejectedRecipientsOf, socketOf } from '../lib/internals.js';
import { verdictOfReply, type Verdict } from './verdict.js';
import {
  daneKey,
  daneTlsInfo,
  setupTls,
  setupVerdict,
  tlsInfo,
  UNVERIFIED,
  type DaneWant,
  type SessionTls,
  type TlsWant,
} from './smtp-tls.js';

export interface SmtpOptions {
  hostname: string;
  port: number;
  tls: 'opportunistic' | 'required' | 'off';
  timeoutMs: number;
  maxMessages: number;
  idleMs?: number;
  /** Extra CAs (PEM, MTA_TLS_CA_FILE) trusted besides the system's when a certificate is verified. */
  ca?: string;
  /** An idle session of pool `key` was closed (idle time-out or the server hung up). */
  onIdleClosed?: (key: string) => void;
}
/** Per send: the pool key (sessions of one key are reused for any target) and its messages-per-connection limit. */
export interface SendOptions {
  pool?: string;
  maxMessages?: number;
  /**
   * Most sessions of `pool` at once: a send beyond waits (until its deadline) for one of them to end its
   * transaction and takes it over at once, or for one to close and opens another.
   */
  maxSessions?: number;
  /**
   * This send's TLS (MTA-STS, the operator's override; default SmtpOptions.tls): `verified` requires STARTTLS and a
   * certificate that chains to a trusted CA and is valid for the MX host name, checked before MAIL FROM — else the
   * send fails (`mta_sts`, 4.7.5) without a byte of the message in plain text. Only sessions that fit are reused.
   */
  tls?: 'verified' | 'opportunistic' | 'off' | 'dane';
  /**
   * `dane`: the MX host's usable TLSA records and names (RFC 7672): STARTTLS required and the chain the server sends
   * must satisfy them (no records: encrypted, not authenticated), checked before MAIL FROM — else `dane`, 4.7.5.
   */
  dane?: DaneWant;
}
export interface Target {
  mxHost: string;
  ip: string;
}
export interface SendResult {
  verdicts: Verdict[];
  /** source_ip: the local address of the connection (the bound one, else the kernel's choice once connected). */
  info: {
    mx_host: string;
    remote_ip: string;
    source_ip?: string;
    tls_version: string | null;
    tls_cipher: string | null;
    /** whether the certificate chains to a trusted CA and names the MX host (null: no TLS) */
    tls_verified?: boolean | null;
    /** why it is not verified (the chain's error, or the name check's) */
    tls_error?: string;
    /** DANE: the RFC 8460 result type of a failure */
    tls_result?: string;
  };
  /** The connection itself failed (connect, greeting, EHLO, TLS): worth trying the next MX. */
  tryNext: boolean;
  /** The session is gone after this transaction (or none was opened): not back in the idle pool. */
  closed: boolean;
  /**
   * Never started: it waited for a session of its pool (SendOptions.maxSessions) until its deadline or until the
   * waiting line was dropped (dropWaiting, at shutdown). Not an attempt; `verdicts` say deferred.
   */
  notStarted?: boolean;
}
type SmtpError = Error & {
  code?: string;
  response?: string;
  responseCode?: number;
  command?: string;
  recipient?: string;
  rejectedErrors?: SmtpError[];
};
interface Session {
  conn: SMTPConnection;
  key: string;
  uses: number;
  dead: boolean;
  dirty: boolean;
  tls: SessionTls | null;
  /** the DANE records and names this session satisfied (daneKey) */
  dane?: string;
  idleTimer?: NodeJS.Timeout;
  fail?: (err: SmtpError) => void;
  localAddress?: string;
  target: Target;
  max: number;
  idle: boolean;
}

/** Idle sessions are pooled per MX address AND source address: one team's IP never carries another pool's mail. */
const sessionKey = (t: Target, source: string | undefined) => `${t.ip}|${t.mxHost}|${source ?? '*'}`;

const timeoutError = (what: string): SmtpError => Object.assign(new Error(`${what} timed out`), { code: 'ETIMEDOUT' });
const NOT_STARTED = 'ENOTSTARTED';

/** Whether a session may carry a send that wants `want` (SendOptions.tls; DANE: the records' daneKey). */
function fits(s: Session, want: TlsWant, dane?: string): boolean {
  if (want === 'dane') return s.dane !== undefined && s.dane === dane;
  if (want === 'verified') return s.tls?.verified === true;
  return want !== 'required' || s.tls !== null;
}
const notStarted = (why: string): SmtpError => Object.assign(new Error(`not sent: ${why}`), { code: NOT_STARTED });

/** A send waiting for a session of its pool (SendOptions.maxSessions). */
interface Waiter {
  cap: number;
  want: TlsWant;
  dane?: string;
  take(s: Session): void;
  open(): void;
  fail(err: SmtpError): void;
}

export class SmtpClient {
  private idle = new Map<string, Session[]>();
  private open = new Set<Session>();
  /** open sessions per pool key, and the sends waiting for one (FIFO) */
  private perKey = new Map<string, number>();
  private waiting = new Map<string, Waiter[]>();
  private closing = false;
  private ca: string[] | undefined;
  constructor(private o: SmtpOptions) {
    this.ca = o.ca ? [...rootCertificates, o.ca] : undefined;
  }

  /**
   * One transaction to `t` from `source` (undefined: the kernel's choice); resolves by `deadline` (ms
   * epoch) at the latest. Only a session opened from the same source address is reused.
   */
  async send(
    t: Target,
    from: string,
    rcpts: string[],
    raw: Buffer,
    deadline: number,
    source?: string,
    opt: SendOptions = {},
  ): Promise<SendResult> {
    const info: SendResult['info'] = {
      mx_host: t.mxHost,
      remote_ip: t.ip,
      source_ip: source,
      tls_version: null,
      tls_cipher: null,
    };
    let s: Session;
    try {
      s = await this.acquire(t, deadline, source, opt);
    } catch (err) {
      const e = err as SmtpError;
      if (e.code === NOT_STARTED) {
        const v: Verdict = { kind: 'deferred', reply: null, command: 'CONN', error: e.message };
        return { verdicts: rcpts.map(() => v), info, tryNext: false, closed: false, notStarted: true };
      }
      const want = opt.tls ?? 'opportunistic';
      const v = setupVerdict(e, want);
      withSessionTls(info, setupTls(e, want));
      return { verdicts: rcpts.map(() => v), info, tryNext: true, closed: true };
    }
    info.mx_host = s.target.mxHost;
    info.remote_ip = s.target.ip;
    info.source_ip = s.localAddress ?? source;
    withSessionTls(info, s.tls);
    const { verdicts, healthy } = await this.transact(s, from, rcpts, raw, deadline);
    const kept = this.release(s, healthy);
    return { verdicts, info, tryNext: false, closed: !kept };
  }

  /** The sends waiting for a session come back at once as not started (SendResult.notStarted). */
  dropWaiting(): void {
    const waiters = [...this.waiting.values()].flat();
    this.waiting.clear();
    for (const w of waiters) w.fail(notStarted('shutting down'));
  }

  /** Closes every connection (QUIT when idle, cut when busy); sends waiting for one come back as not started. */
  closeAll(): void {
    this.closing = true;
    this.dropWaiting();
    for (const s of [...this.open]) {
      s.fail?.(Object.assign(new Error('shutting down'), { code: 'ESHUTDOWN' }));
      this.quit(s);
    }
    this.idle.clear();
  }

  get openConnections(): number {
    return this.open.size;
  }

  /** Pool keys with idle sessions (an entry goes with its last idle session). */
  get idlePools(): number {
    return this.idle.size;
  }

  /** Whether a session of `pool` is open here (idle or busy). */
  hasOpen(pool: string): boolean {
    return (this.perKey.get(pool) ?? 0) > 0;
  }

  private async acquire(t: Target, deadline: number, source: string | undefined, opt: SendOptions): Promise<Session> {
    const key = opt.pool ?? sessionKey(t, source);
    const want: TlsWant = opt.tls ?? (this.o.tls === 'required' ? 'required' : 'opportunistic');
    const dane = want === 'dane' && opt.dane ? opt.dane : undefined;
    const s = this.idleFit(key, want, t, dane && daneKey(dane));
    if (s) return s;
    const max = opt.maxMessages ?? this.o.maxMessages;
    const cap = opt.maxSessions ?? Infinity;
    // The pool is full of idle sessions this send may not use (not verified TLS): one of them makes room.
    const unfit = this.idle.get(key)?.[0];
    if ((this.perKey.get(key) ?? 0) >= cap && unfit) this.quitIdle(unfit);
    if ((this.perKey.get(key) ?? 0) < cap) return this.connect(t, deadline, source, key, max, want, dane);
    return new Promise<Session>((resolve, reject) => {
      const w: Waiter = {
        cap,
        want,
        dane: dane && daneKey(dane),
        take: (x) => {
          clearTimeout(timer);
          resolve(x);
        },
        open: () => {
          clearTimeout(timer);
          this.connect(t, deadline, source, key, max, want, dane).then(resolve, reject);
        },
        fail: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const timer = setTimeout(
        () => {
          const l = this.waiting.get(key);
          const i = l?.indexOf(w) ?? -1;
          if (i >= 0) l!.splice(i, 1);
          if (l?.length === 0) this.waiting.delete(key);
          reject(notStarted('no session of its pool came free before the deadline'));
        },
        Math.max(1, deadline - Date.now()),
      );
      const l = this.waiting.get(key) ?? [];
      l.push(w);
      this.waiting.set(key, l);
    });
  }

  /** The last idle session of `key` that may carry a send wanting `want` to `t` (verified TLS, DANE: that MX host). */
  private idleFit(key: string, want: TlsWant, t: Target, dane?: string): Session | undefined {
    const list = this.idle.get(key);
    if (!list) return undefined;
    for (let i = list.length - 1; i >= 0; i--) {
      const s = list[i];
      const sameHost = s.target.mxHost === t.mxHost;
      if (!s.dead && (!fits(s, want, dane) || ((want === 'verified' || want === 'dane') && !sameHost))) continue;
      list.splice(i, 1);
      clearTimeout(s.idleTimer);
      s.idle = false;
      if (!s.dead) {
        if (list.length === 0) this.idle.delete(key);
        return s;
      }
    }
    if (list.length === 0) this.idle.delete(key); // release() makes a new list: no entry per address ever seen
    return undefined;
  }

  /** An idle session out of its pool and closed (QUIT). */
  private quitIdle(s: Session): void {
    const list = this.idle.get(s.key);
    const i = list?.indexOf(s) ?? -1;
    if (i >= 0) list!.splice(i, 1);
    if (list?.length === 0) this.idle.delete(s.key);
    s.idle = false;
    this.quit(s);
    this.o.onIdleClosed?.(s.key);
  }

  /** The first send waiting for a session of `key` (removed from the line). */
  private nextWaiter(key: string): Waiter | undefined {
    const l = this.waiting.get(key);
    const w = l?.shift();
    if (l?.length === 0) this.waiting.delete(key);
    return w;
  }

  /** A session is gone: out of the counts; a send waiting for one of its pool may open another. */
  private gone(s: Session): void {
    if (!this.open.delete(s)) return;
    const n = (this.perKey.get(s.key) ?? 1) - 1;
    if (n > 0) this.perKey.set(s.key, n);
    else this.perKey.delete(s.key);
    const first = this.waiting.get(s.key)?.[0];
    if (first && n < first.cap && !this.closing) this.nextWaiter(s.key)!.open();
  }

  private connect(
    t: Target,
    deadline: number,
    source: string | undefined,
    key: string,
    max: number,
    want: TlsWant,
    dane?: DaneWant,
  ): Promise<Session> {
    const servername = isIP(t.mxHost) ? undefined : t.mxHost;
    const tls = want === 'verified' || want === 'required' || want === 'dane' ? 'required' : want;
    const conn = new SMTPConnection({
      host: t.ip,
      port: this.o.port,
      name: this.o.hostname,
      servername,
      localAddress: source,
      connectionTimeout: this.o.timeoutMs,
      greetingTimeout: this.o.timeoutMs,
      socketTimeout: this.o.timeoutMs,
      socketCloseTimeout: 1000,
      ignoreTLS: tls === 'off',
      requireTLS: tls === 'required',
      opportunisticTLS: tls === 'opportunistic',
      // Never refused during the handshake: the verdict (chain, name) is read after it, so an unverified certificate
      // is recorded on every attempt, and refused only where verified TLS is required (before MAIL FROM).
      tls: { rejectUnauthorized: false, servername, ...(this.ca ? { ca: this.ca } : {}) },
      logger: false,
    });
    const s: Session = { conn, key, uses: 0, dead: false, dirty: false, tls: null, target: t, max, idle: false };
    this.open.add(s);
    this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
    const idleGone = () => {
      if (s.idle) {
        s.idle = false;
        this.o.onIdleClosed?.(s.key);
      }
    };
    conn.on('error', (err: SmtpError) => {
      s.dead = true;
      s.fail?.(err);
      idleGone();
    });
    conn.on('end', () => {
      s.dead = true;
      this.gone(s);
      s.fail?.(Object.assign(new Error('Connection closed'), { code: 'ECONNECTION' }));
      idleGone();
    });
    return new Promise<Session>((resolve, reject) => {
      let settled = false;
      const fail = (err: SmtpError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        s.fail = undefined;
        s.dead = true;
        this.gone(s);
        conn.close();
        reject(err);
      };
      // connect + greeting + EHLO + STARTTLS + EHLO: each bounded by nodemailer, the whole by this.
      const timer = setTimeout(
        () => fail(timeoutError('connection set-up')),
        Math.max(1, Math.min(deadline - Date.now(), this.o.timeoutMs * 3)),
      );
      s.fail = fail;
      conn.connect((err) => {
        if (err) return fail(err as SmtpError);
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        s.fail = undefined;
        s.tls = want === 'dane' ? daneTlsInfo(conn, dane ?? { records: [], names: [] }) : tlsInfo(conn, t.mxHost);
        s.localAddress = socketOf(conn)?.localAddress ?? undefined;
        // DANE: refused when the records are not satisfied (no records: any TLS will do, unauthenticated).
        const refused = want === 'dane' ? !s.tls || s.tls.error !== undefined : want === 'verified' && !s.tls?.verified;
        if (refused) {
          settled = false;
          return fail(
            Object.assign(new Error(s.tls?.error ?? 'no TLS'), { code: UNVERIFIED, tls: s.tls ?? undefined }),
          );
        }
        if (want === 'dane') s.dane = daneKey(dane ?? { records: [], names: [] });
        resolve(s);
      });
    });
  }

  private transact(
    s: Session,
    from: string,
    rcpts: string[],
    raw: Buffer,
    deadline: number,
  ): Promise<{ verdicts: Verdict[]; healthy: boolean }> {
    return new Promise((resolve) => {
      let done = false;
      const finish = (err: SmtpError | null, info?: SMTPConnection.SentMessageInfo) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        s.fail = undefined;
        const r = mapSend(err, info, rcpts);
        s.dirty = r.dirty;
        resolve(r);
      };
      const timer = setTimeout(
        () => {
          s.dead = true;
          finish(timeoutError('SMTP transaction'));
          s.conn.close();
        },
        Math.max(1, deadline - Date.now()),
      );
      // A server that replies 421 and hangs up (Gmail's 4.7.28 does) ends the session before nodemailer hands
      // back that reply: the last reply seen on the connection is the transaction's.
      s.fail = (err) => finish(withLastReply(s, err));
      const go = () =>
        s.conn.send({ from, to: rcpts }, oneWrite(s.conn, raw), (err, info) =>
          finish(withRcptErrors(s, err as SmtpError | null), info),
        );
      if (s.dirty) s.conn.reset((err) => (err ? finish(err as SmtpError) : go()));
      else go();
    });
  }

  /** Back to the idle pool (true) or closed (false). */
  private release(s: Session, healthy: boolean): boolean {
    s.uses++;
    if (!healthy || s.dead || this.closing || s.uses >= Math.min(s.max, this.o.maxMessages)) {
      this.quit(s);
      return false;
    }
    // A send waiting for a session of this pool takes this one over at once (no idle spell, no new connection),
    // unless the pool now holds more sessions than its (throttled) limit: then this one goes.
    const first = this.waiting.get(s.key)?.[0];
    if (first && (this.perKey.get(s.key) ?? 0) > first.cap) {
      this.quit(s);
      return false;
    }
    if (first && !fits(s, first.want, first.dane)) {
      this.quit(s); // the waiting send opens one that fits (gone())
      return false;
    }
    if (first) {
      this.nextWaiter(s.key)!.take(s);
      return true;
    }
    const list = this.idle.get(s.key) ?? [];
    s.idle = true;
    list.push(s);
    this.idle.set(s.key, list);
    s.idleTimer = setTimeout(() => {
      const i = list.indexOf(s);
      if (i >= 0) list.splice(i, 1);
      if (list.length === 0 && this.idle.get(s.key) === list) this.idle.delete(s.key);
      const wasIdle = s.idle;
      s.idle = false;
      this.quit(s);
      if (wasIdle) this.o.onIdleClosed?.(s.key);
    }, this.o.idleMs ?? 5000);
    s.idleTimer.unref();
    return true;
  }

  private quit(s: Session): void {
    clearTimeout(s.idleTimer);
    this.gone(s);
    const wasDead = s.dead;
    s.dead = true;
    try {
      if (wasDead) s.conn.close();
      else s.conn.quit();
    } catch {
      /* already closed */
    }
  }
}

/** The session's TLS into a send's info. */
function withSessionTls(info: SendResult['info'], tls: SessionTls | null): void {
  info.tls_version = tls?.version ?? null;
  info.tls_cipher = tls?.cipher ?? null;
  info.tls_verified = tls ? tls.verified : null;
  if (tls?.error) info.tls_error = tls.error;
  if (tls?.result_type) info.tls_result = tls.result_type;
}

/**
 * The message as a source nodemailer pipes into its dot-stuffing stream once DATA is answered. Given a Buffer, that
 * stream writes the bytes and then the closing dot in two socket writes: two segments, and one more read on the
 * server's side, per message. Here the socket is corked until the end of this event-loop turn (the stream hands
 * both over in the ticks before it), so they leave in one write (one TLS record with STARTTLS). Uncorking at the
 * turn's end, not at the stream's end: a message over the socket's high-water mark waits for 'drain' before its
 * dot, which a corked socket never emits.
 */
function oneWrite(conn: SMTPConnection, raw: Buffer): Readable {
  const pipe = <T extends NodeJS.WritableStream>(stream: T): T => {
    const sock = socketOf(conn);
    if (sock && !sock.destroyed) {
      sock.cork();
      setImmediate(() => sock.uncork());
    }
    stream.write(raw);
    stream.end();
    return stream;
  };
  return { pipe } as unknown as Readable;
}

function withLastReply(s: Session, err: SmtpError): SmtpError {
  const last = (s.conn as unknown as { lastServerResponse?: string | false }).lastServerResponse;
  if (err.response || typeof last !== 'string' || !/^[45][0-9]{2}[ -]/.test(last)) return err;
  return Object.assign(err, { response: last, responseCode: Number(last.slice(0, 3)) });
}

/**
 * nodemailer drops the RCPT refusals of the envelope when DATA then fails; they are still on the
 * connection's envelope, and each refused recipient must keep its own reply (a 550 5.1.1 stays hard).
 */
function withRcptErrors(s: Session, err: SmtpError | null): SmtpError | null {
  // Only for a refused DATA: after a refused MAIL, pipelined RCPTs draw 503s that say nothing of the recipients.
  if (!err || err.rejectedErrors || err.command !== 'DATA') return err;
  const rejected = rejectedRecipientsOf(s.conn);
  if (rejected?.length) err.rejectedErrors = rejected;
  return err;
}

/** Reads nodemailer's send result into one verdict per recipient; `healthy` = session reusable. */
export function mapSend(err: SmtpError | null, info: SMTPConnection.SentMessageInfo | undefined, rcpts: string[]) {
  const perRcpt = new Map<string, SmtpError>();
  for (const e of err?.rejectedErrors ?? info?.rejectedErrors ?? [])
    if ((e as SmtpError).recipient) perRcpt.set((e as SmtpError).recipient!, e as SmtpError);
  const rcptVerdict = (r: string) => {
    const e = perRcpt.get(r);
    return e ? verdictOfReply(e.response, 'RCPT', e.message) : null;
  };
  if (!err) {
    const data = verdictOfReply(info?.response ?? null, 'DATA');
    return { verdicts: rcpts.map((r) => rcptVerdict(r) ?? data), healthy: true, dirty: data.kind !== 'accepted' };
  }
  if (err.code === 'EENVELOPE' || err.code === 'EMESSAGE') {
    const command = err.command === 'MAIL FROM' ? 'MAIL' : err.command === 'RCPT TO' ? 'RCPT' : 'DATA';
    const all = verdictOfReply(err.response, command, err.message);
    return { verdicts: rcpts.map((r) => rcptVerdict(r) ?? all), healthy: true, dirty: true };
  }
  const v = verdictOfReply(
    err.response && err.responseCode && err.responseCode >= 400 && err.responseCode < 500 ? err.response : null,
    err.command ?? 'CONN',
    err.message,
  );
  return { verdicts: rcpts.map(() => v), healthy: false, dirty: true };
}
