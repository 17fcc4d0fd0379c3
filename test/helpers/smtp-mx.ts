// A scriptable recipient MX for tests: smtp-server on a loopback address, port 0 (or a given port),
// with per-command / per-recipient replies, delays, waits for a promise, stalls, connection drops (also mid-DATA), and a
// record of every message received. `startRawMx` serves hand-written (garbage) replies instead.
import net from 'node:net';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';

/**
 * What the server does at one step: accept (undefined; `ok`: with this text after DATA's 250), reply with a code, wait,
 * stall or hang up.
 */
export type Step =
  | undefined
  | { ok: string }
  | { code: number; message: string }
  | { delayMs: number; then?: Step }
  | { until: Promise<unknown>; then?: Step }
  | { stall: true }
  | { drop: true };

export interface MxScript {
  connect?: (session: SMTPServerSession) => Step;
  mail?: (from: string, session: SMTPServerSession) => Step;
  rcpt?: (to: string, session: SMTPServerSession) => Step;
  /** The final reply to DATA; `dropMidData` hangs up after part of the message has arrived. */
  data?: (rcpts: string[], session: SMTPServerSession) => Step | { dropMidData: true };
}

export interface Received {
  from: string;
  to: string[];
  raw: Buffer;
  secure: boolean;
  sessionId: string;
  /** the client's EHLO/HELO name (which sending node, when nodes are given distinct MTA_HOSTNAMEs) */
  helo: string;
  at: number;
}

export interface MxOptions {
  host?: string;
  port?: number;
  tls?: boolean;
  /** the STARTTLS certificate (PEM; default smtp-server's own self-signed one) */
  key?: string;
  cert?: string;
  script?: MxScript;
}

const reply = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

export class TestMx {
  readonly messages: Received[] = [];
  script: MxScript;
  connections = 0;
  rcptCommands: string[] = [];
  port = 0;
  private server!: SMTPServer;
  private sessions = new Set<string>();

  constructor(private opts: MxOptions = {}) {
    this.script = opts.script ?? {};
  }

  get host(): string {
    return this.opts.host ?? '127.0.0.1';
  }
  /** Concurrent SMTP sessions open right now. */
  get open(): number {
    return this.sessions.size;
  }

  async start(): Promise<this> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: this.opts.tls === false ? ['AUTH', 'STARTTLS'] : ['AUTH'],
      ...(this.opts.key && this.opts.cert ? { key: this.opts.key, cert: this.opts.cert } : {}),
      logger: false,
      closeTimeout: 200,
      size: 10 * 1024 * 1024,
      onConnect: (session, cb) => {
        this.connections++;
        this.sessions.add(session.id);
        this.run(this.script.connect?.(session), session, cb);
      },
      onClose: (session) => {
        this.sessions.delete(session.id);
      },
      onMailFrom: (addr, session, cb) => this.run(this.script.mail?.(addr.address, session), session, cb),
      onRcptTo: (addr, session, cb) => {
        this.rcptCommands.push(addr.address);
        this.run(this.script.rcpt?.(addr.address, session), session, cb);
      },
      onData: (stream, session, cb) => this.onData(stream, session, cb),
    });
    this.server.on('error', () => {
      /* a dropped client is not a test failure */
    });
    await new Promise<void>((resolve, reject) => {
      this.server.server.once('error', reject);
      this.server.listen(this.opts.port ?? 0, this.host, () => resolve());
    });
    this.port = (this.server.server.address() as net.AddressInfo).port;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }

  /** Messages whose envelope names this recipient. */
  to(addr: string): Received[] {
    return this.messages.filter((m) => m.to.includes(addr));
  }

  private onData(stream: NodeJS.ReadableStream, session: SMTPServerSession, cb: (err?: Error | null) => void) {
    const chunks: Buffer[] = [];
    const rcpts = session.envelope.rcptTo.map((r) => r.address);
    const step = this.script.data?.(rcpts, session);
    if (step && 'dropMidData' in step) {
      stream.once('data', () => this.drop(session));
      stream.on('error', () => {});
      return;
    }
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const record = () =>
        this.messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: rcpts,
          raw: Buffer.concat(chunks),
          secure: session.secure,
          sessionId: session.id,
          helo: session.hostNameAppearsAs,
          at: Date.now(),
        });
      this.run(step, session, (err, message) => {
        if (!err) record();
        (cb as (err?: Error | null, message?: string) => void)(err, message);
      });
    });
  }

  private run(step: Step, session: SMTPServerSession, cb: (err?: Error | null, message?: string) => void): void {
    if (step === undefined) return cb();
    if ('ok' in step) return cb(null, step.ok);
    if ('stall' in step) return;
    if ('drop' in step) return this.drop(session);
    if ('delayMs' in step) {
      setTimeout(() => this.run(step.then, session, cb), step.delayMs);
      return;
    }
    if ('until' in step) {
      void step.until.then(() => this.run(step.then, session, cb));
      return;
    }
    cb(reply(step.code, step.message));
  }

  private drop(session: SMTPServerSession): void {
    for (const c of this.server.connections) if (c.id === session.id) c._socket.destroy();
  }
}

/** A TCP server speaking whatever `onSocket` writes: garbage greetings, half replies, silence. */
export async function startRawMx(
  host: string,
  port: number,
  onSocket: (s: net.Socket) => void,
): Promise<{ port: number; connections: number; stop(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const state = { port: 0, connections: 0, stop: async () => {} };
  const server = net.createServer((s) => {
    state.connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    onSocket(s);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  state.port = (server.address() as net.AddressInfo).port;
  state.stop = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return state;
}
