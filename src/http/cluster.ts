// HTTP workers (MTA_HTTP_WORKERS, PostgreSQL only; docs/operations.md "HTTP workers"). The store's calls block the
// thread that makes them (src/store/pg/sync-client.ts), so one process takes turns between the HTTP API and the
// delivery loop. With workers, `mta serve` is a primary process that runs everything but answers no HTTP request
// while a worker is up: it accepts each connection and hands the socket to the next worker (round robin). A worker
// is `mta serve` again, started by the primary with the same arguments, serving the whole HTTP app on its own
// connection to the same database, without the loop, listeners, jobs or dispatcher (features check isHttpWorker).
// What keeps the node one node (services/siblings.ts): a worker's commit nudges the primary's loop or dispatcher; a
// key revoked or a domain written anywhere drops every process's caches; the primary keeps the node's rate-limit
// buckets and sign-in back-off and answers for the workers; /metrics is the sum of every process.
import { fork, type ChildProcess } from 'node:child_process';
import type http from 'node:http';
import type net from 'node:net';
import type { Logger } from 'pino';
import type { Ctx } from '../services/context.js';
import type { Nudge, Siblings } from '../services/siblings.js';
import { afterWrites, nudged } from '../services/siblings.js';
import { forgetEverything } from '../services/remembered.js';
import { keyLimiter } from '../services/rate-limits.js';
import { LEASE_MAX, Leases, type Lease } from './cluster-leases.js';
import { RemoteIntake, intakeFromWorker, type IntakeMsg } from './cluster-intake.js';
import { localGuard } from './dashboard/sign-in-guard.js';
import { aggregateMetrics, localMetrics } from './metrics.js';

/** The variable that makes `mta serve` an HTTP worker (set by the primary, with its worker number). */
export const WORKER_ENV = 'MTA_HTTP_WORKER_OF_PRIMARY';

type Msg =
  | { t: 'ready' }
  | { t: 'conn'; id: number }
  | { t: 'took'; id: number }
  | { t: 'nudge'; kind: Nudge }
  | { t: 'forget' }
  | { t: 'give'; key: string; n: number }
  | { t: 'stop' }
  | { t: 'call'; id: number; op: string; args: unknown[] }
  | { t: 'reply'; id: number; value?: unknown; error?: string }
  | IntakeMsg;

const CALL_TIMEOUT_MS = 5000;
/** How long a stopping worker lets the requests it is answering finish before it closes their connections. */
const STOP_GRACE_MS = 10_000;

/** Counts the requests being answered; the function returned waits (up to `ms`) until none is, idle sockets closed. */
function draining(server: http.Server): (ms: number) => Promise<void> {
  let active = 0;
  server.on('request', (_req, res: http.ServerResponse) => {
    active++;
    res.once('close', () => active--);
  });
  return async (ms) => {
    const until = Date.now() + ms;
    server.closeIdleConnections();
    while (active > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  };
}

/** Calls over one IPC channel: each asks with an id and waits for the reply of that id (or the timeout). */
class Calls {
  private seq = 0;
  private pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  ask(send: (m: Msg) => void, op: string, args: unknown[]): Promise<unknown> {
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.settle({ t: 'reply', id, error: `no answer to ${op}` }), CALL_TIMEOUT_MS);
      this.pending.set(id, {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      try {
        send({ t: 'call', id, op, args });
      } catch (err) {
        this.settle({ t: 'reply', id, error: (err as Error).message });
      }
    });
  }

  settle(m: Extract<Msg, { t: 'reply' }>): void {
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error !== undefined) p.reject(new Error(m.error));
    else p.resolve(m.value);
  }

  /** The other side is gone: every call waiting on it fails now. */
  failAll(why: string): void {
    for (const id of [...this.pending.keys()]) this.settle({ t: 'reply', id, error: why });
  }
}

/** Answers a call with what `run` gives (or its error). */
async function answer(send: (m: Msg) => void, m: Extract<Msg, { t: 'call' }>, run: () => Promise<unknown> | unknown) {
  try {
    send({ t: 'reply', id: m.id, value: await run() });
  } catch (err) {
    send({ t: 'reply', id: m.id, error: (err as Error).message });
  }
}

// ---------------------------------------------------------------- worker side

/** An HTTP worker's channel to its primary (process IPC). */
/** `leaseMs`: how long lent rate-limit tokens are kept once their key goes quiet (MTA_HTTP_LEASE_MS). */
export function workerSiblings(leaseMs: number): Siblings & {
  serve(ctx: Ctx, server: http.Server, close: () => Promise<void>): void;
} {
  if (!process.send) throw new Error(`${WORKER_ENV} is set but this process has no IPC channel to a primary`);
  const send = (m: Msg) => void process.send!(m);
  const calls = new Calls();
  const sent = new Set<Nudge>();
  const leases = new Leases(
    (key) => calls.ask(send, 'lease', [key]) as Promise<Lease>,
    (key, n) => send({ t: 'give', key, n }),
    leaseMs,
  );
  const intake = new RemoteIntake(send);
  let db: Ctx['db'] | null = null;
  return {
    role: 'worker',
    nudge(kind) {
      // After the commit that holds this process's writes so far (the open turn's, or the one in flight): one
      // message per kind for the callbacks run together when a COMMIT is in.
      const go = () => {
        if (sent.has(kind)) return;
        sent.add(kind);
        queueMicrotask(() => sent.delete(kind));
        send({ t: 'nudge', kind });
      };
      if (db) afterWrites(db, go);
      else setImmediate(go);
    },
    forget: () => send({ t: 'forget' }),
    take: (key) => leases.take(key),
    call: (op, args) => calls.ask(send, op, args),
    intake,
    serve(ctx, server, closeService) {
      db = ctx.db;
      intake.now = () => ctx.now();
      const drain = draining(server);
      const close = async () => {
        await drain(STOP_GRACE_MS);
        await closeService();
      };
      process.on('message', (m: Msg, handle?: net.Socket) => {
        if (m.t === 'conn' && handle) {
          send({ t: 'took', id: m.id });
          server.emit('connection', handle);
          handle.resume();
        } else if (m.t === 'reply') calls.settle(m);
        else if (m.t === 'grant') intake.granted(m.n, m.leaseMs);
        else if (m.t === 'forget') forgetEverything();
        else if (m.t === 'call' && m.op === 'metrics') void answer(send, m, () => localMetrics(ctx.db));
        else if (m.t === 'stop') void close().then(() => process.exit(0));
      });
      // The primary is gone (killed): nothing hands this process connections any more.
      process.on('disconnect', () => {
        calls.failAll('the primary process is gone');
        void close().then(() => process.exit(0));
      });
      send({ t: 'ready' });
    },
  };
}

// ---------------------------------------------------------------- primary side

interface Worker {
  n: number;
  child: ChildProcess;
  ready: boolean;
  readyAt?: number;
  calls: Calls;
  /** Connections sent and not yet taken: this process keeps its copy until the worker says it has its own. */
  handed: Map<number, net.Socket>;
}

/**
 * The primary's side: `siblings` goes into its service (before it starts); `start` forks the workers and takes over
 * the HTTP server's connections; `stop` ends the workers (before the service closes).
 */
export class HttpWorkers {
  private workers: Worker[] = [];
  private next = 0;
  private stopping = false;
  private ctx: Ctx | null = null;
  private restarts = 0;
  private connSeq = 0;
  private serveHere: (sock: net.Socket) => void = (sock) => sock.destroy();

  constructor(
    private readonly count: number,
    private readonly log: Logger,
  ) {}

  readonly siblings: Siblings = {
    role: 'primary',
    nudge: (kind) => this.ctx && nudged(this.ctx.db, kind),
    forget: () => this.broadcast({ t: 'forget' }),
    take: (key) => this.limiter().take(key),
    call: (op, args) => this.handle(op, args),
  };

  start(ctx: Ctx, server: http.Server): void {
    this.ctx = ctx;
    // Sockets arrive paused, so a worker reads the request from its first byte.
    (server as unknown as { pauseOnConnect: boolean }).pauseOnConnect = true;
    const own = server.listeners('connection') as ((s: net.Socket) => void)[];
    server.removeAllListeners('connection');
    this.serveHere = (sock: net.Socket) => {
      for (const f of own) f.call(server, sock);
      sock.resume();
    };
    server.on('connection', (sock: net.Socket) => this.hand(sock));
    // A connection the primary answered while no worker was up (at start, during a restart) is closed after its
    // next answer once one is, so a keep-alive client reconnects and gets a worker.
    server.prependListener('request', (_req, res: http.ServerResponse) => {
      if (this.ready > 0) res.setHeader('Connection', 'close');
    });
    for (let n = 1; n <= this.count; n++) this.spawn(n);
  }

  /** Workers up now (tests, logs). */
  get ready(): number {
    return this.workers.filter((w) => w.ready).length;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.child.exitCode !== null || w.child.signalCode !== null) return resolve();
            const kill = setTimeout(() => w.child.kill('SIGKILL'), 15_000);
            w.child.once('exit', () => (clearTimeout(kill), resolve()));
            try {
              w.child.send({ t: 'stop' } satisfies Msg);
            } catch {
              w.child.kill('SIGTERM');
            }
          }),
      ),
    );
  }

  /**
   * To the next worker up, or here when none is (starting, restarting, stopping). This process keeps its copy of the socket
   * until the worker says it took it: a worker that dies before that (its exit not yet seen here) has read nothing,
   * and the connection goes to another.
   */
  private hand(sock: net.Socket): void {
    const w = this.pick();
    if (!w) return this.serveHere(sock);
    const id = ++this.connSeq;
    w.handed.set(id, sock);
    w.child.send({ t: 'conn', id } satisfies Msg, sock, { keepOpen: true }, (err) => {
      if (err && w.handed.delete(id) && !sock.destroyed) this.hand(sock);
    });
  }

  private pick(): Worker | undefined {
    if (this.stopping) return undefined; // the workers drain; the primary answers until it closes too
    for (let i = 0; i < this.workers.length; i++) {
      const w = this.workers[this.next++ % this.workers.length]!;
      if (w.ready && w.child.connected) return w;
    }
    return undefined;
  }

  private spawn(n: number): void {
    const child = fork(process.argv[1]!, process.argv.slice(2), {
      env: { ...process.env, [WORKER_ENV]: String(n) },
      execArgv: process.execArgv,
      stdio: 'inherit',
    });
    const w: Worker = { n, child, ready: false, calls: new Calls(), handed: new Map() };
    this.workers = [...this.workers.filter((x) => x.n !== n), w];
    const send = (m: Msg) => void child.send(m);
    child.on('message', (m: Msg) => {
      if (m.t === 'ready') {
        w.ready = true;
        w.readyAt = Date.now();
        this.log.info({ worker: n, pid: child.pid }, 'HTTP worker up');
      } else if (m.t === 'took') {
        w.handed.get(m.id)?.destroy(); // this process's descriptor only: the worker holds the connection
        w.handed.delete(m.id);
      } else if (m.t === 'nudge') this.siblings.nudge(m.kind);
      else if (m.t === 'forget') {
        forgetEverything();
        this.broadcast(m, w);
      } else if (m.t === 'reply') w.calls.settle(m);
      else if (m.t === 'give') this.limiter().give(m.key, m.n);
      else if ((m.t === 'intake' || m.t === 'ask-intake') && this.ctx)
        intakeFromWorker(this.ctx, m, (n, leaseMs) => send({ t: 'grant', n, leaseMs }));
      else if (m.t === 'call') void answer(send, m, () => this.handle(m.op, m.args));
    });
    child.on('error', (err) => this.log.error({ err, worker: n }, 'HTTP worker error'));
    child.on('exit', (code, signal) => {
      w.ready = false;
      w.calls.failAll('the HTTP worker is gone');
      const orphans = [...w.handed.values()];
      w.handed.clear();
      for (const sock of orphans) if (!sock.destroyed) this.hand(sock);
      if (this.stopping) return;
      if (w.readyAt !== undefined && Date.now() - w.readyAt > 60_000) this.restarts = 0;
      // A crash loses only the requests it was answering (a 202 is sent after its commit); start another.
      const delay = Math.min(30_000, 500 * 2 ** Math.min(this.restarts++, 6));
      this.log.error({ worker: n, code, signal, restartInMs: delay }, 'HTTP worker exited; starting another');
      setTimeout(() => !this.stopping && this.spawn(n), delay).unref();
    });
  }

  private broadcast(m: Msg, except?: Worker): void {
    for (const w of this.workers)
      if (w !== except && w.child.connected)
        try {
          w.child.send(m);
        } catch {
          /* exiting: it forgets everything anyway */
        }
  }

  /** The node's API rate limiter (the workers run with one when it is on). */
  private limiter() {
    const l = this.ctx && keyLimiter(this.ctx);
    if (!l) throw new Error('no rate limiter');
    return l;
  }

  /** Lends a worker tokens of a bucket: a share of what it holds, split over the node's processes (see Leases). */
  private lease(key: string): Lease {
    const l = this.limiter();
    const share = Math.floor(l.peek(key).remaining / (2 * (this.count + 1)));
    return l.takeUpTo(key, Math.max(1, Math.min(LEASE_MAX, share)));
  }

  /** What a worker (or this process's own /metrics) asks of the node. */
  private async handle(op: string, args: unknown[]): Promise<unknown> {
    const ctx = this.ctx;
    if (!ctx) throw new Error('not started');
    if (op === 'lease') return this.lease(String(args[0]));
    if (op === 'signin.refusal') return localGuard(ctx).refusal(String(args[0]));
    if (op === 'signin.failed') return localGuard(ctx).failed(String(args[0]));
    if (op === 'metrics') {
      const parts = await Promise.all([
        localMetrics(ctx.db),
        ...this.workers
          .filter((w) => w.ready && w.child.connected)
          .map((w) => w.calls.ask((m) => void w.child.send(m), 'metrics', []).catch(() => [])),
      ]);
      return aggregateMetrics(parts as unknown[][]);
    }
    throw new Error(`unknown call ${op}`);
  }
}
