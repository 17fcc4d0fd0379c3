// Prometheus metrics at GET /metrics (prom-client, one registry per service): HTTP request
// durations, delivery events by type, queue depths read from the store at scrape time. No team data.
// Access: `Authorization: Bearer <metricsToken>` when that is set, else loopback clients only; others get 404.
import { createHash, timingSafeEqual } from 'node:crypto';
import { statfsSync } from 'node:fs';
import type Koa from 'koa';
import { Registry, Counter, Histogram, Gauge, collectDefaultMetrics } from 'prom-client';
import { ApiError } from '../core/errors.js';
import {
  dueDeliveries,
  dueLagSeconds,
  onEmailEvent,
  pendingDeliveries,
  pendingOutboxRows,
  poolWork,
  storeWork,
  type PoolKindStats,
} from '../services/metrics.js';
import type { MountFn } from './app.js';
import type { Ctx } from '../services/context.js';

export interface Metrics {
  registry: Registry;
  mount: MountFn;
}

/** Registries other features add for the same store (the delivery loop's mta_site_* / mta_ip_*), served with these. */
const extraRegistries = new WeakMap<object, Registry[]>();
export function addMetricsRegistry(db: object, r: Registry): void {
  extraRegistries.set(db, [...(extraRegistries.get(db) ?? []), r]);
}

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(ip: string): boolean {
  return /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/i.test(ip) || ip === '::1';
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** May this request read /metrics? The socket address is used (the app does not trust proxy headers). */
export function metricsAllowed(token: string | undefined, authorization: string, remoteIp: string): boolean {
  if (token === undefined) return isLoopback(remoteIp);
  const m = /^Bearer (\S+)$/.exec(authorization);
  return m !== null && timingSafeEqual(digest(m[1]), digest(token));
}

/** Free bytes for an unprivileged user where `dir` lives (-1 when it cannot be read). */
function dataDirFree(dir: string): number {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return -1;
  }
}

function queueGauges(ctx: Ctx, registry: Registry): void {
  const gauges: [string, string, () => number | Promise<number>][] = [
    [
      'mta_deliveries_pending',
      'Recipients with work left (queued, deferred or in flight).',
      () => pendingDeliveries(ctx),
    ],
    ['mta_deliveries_due', 'Recipients due for an attempt now.', () => dueDeliveries(ctx)],
    [
      'mta_deliveries_due_lag_seconds',
      'Seconds the longest-waiting due recipient has been due (0 when none is).',
      () => dueLagSeconds(ctx),
    ],
    ['mta_webhook_deliveries_pending', 'Webhook deliveries not yet finished.', () => pendingOutboxRows(ctx)],
    [
      'mta_data_dir_free_bytes',
      'Bytes an unprivileged user may still write on the file system of MTA_DATA_DIR (-1: unreadable).',
      () => dataDirFree(ctx.config.dataDir),
    ],
  ];
  for (const [name, help, read] of gauges) {
    new Gauge({
      name,
      help,
      registers: [registry],
      aggregator: 'first',
      async collect() {
        this.set(await read());
      },
    });
  }
}

/** PostgreSQL only: the engine's statements, round trips and the time the event loop waited for them. */
function storeMetrics(ctx: Ctx, registry: Registry): void {
  if (!storeWork(ctx)) return;
  const counters: [string, string, (w: NonNullable<ReturnType<typeof storeWork>>) => number][] = [
    ['mta_db_statements_total', 'SQL statements sent to PostgreSQL.', (w) => w.statements],
    ['mta_db_round_trips_total', "Round trips to the PostgreSQL connection's thread.", (w) => w.roundTrips],
    ['mta_db_wait_seconds_total', 'Time the main thread waited for PostgreSQL.', (w) => w.waitSeconds],
  ];
  for (const [name, help, read] of counters)
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read(storeWork(ctx)!));
      },
    });
  poolMetrics(ctx, registry);
}

/** PostgreSQL with a pool: its use by kind (turn, claim, result, other), and connections held over time. */
function poolMetrics(ctx: Ctx, registry: Registry): void {
  if (!poolWork(ctx)) return;
  const byKind: [string, string, keyof PoolKindStats][] = [
    ['mta_db_pool_acquires_total', 'Connections taken from the PostgreSQL pool, by kind of use.', 'acquires'],
    ['mta_db_pool_wait_seconds_total', 'Time spent waiting for a connection of the pool, by kind.', 'waitSeconds'],
    ['mta_db_pool_hold_seconds_total', 'Time connections of the pool were held, by kind.', 'holdSeconds'],
    [
      'mta_db_pool_answer_seconds_total',
      "Of the time held: waiting for the server's answers (and for the event loop to read them), by kind.",
      'answerSeconds',
    ],
    ['mta_db_pool_commit_seconds_total', 'Of that: waiting for COMMITs, by kind.', 'commitSeconds'],
    ['mta_db_pool_statements_total', 'SQL statements sent on the pool, by kind.', 'statements'],
    ['mta_db_pool_round_trips_total', 'Round trips on the pool, by kind.', 'roundTrips'],
  ];
  for (const [name, help, key] of byKind)
    new Counter({
      name,
      help,
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [kind, s] of poolWork(ctx)?.kinds ?? []) this.inc({ kind }, s[key]);
      },
    });
  new Counter({
    name: 'mta_db_pool_busy_seconds_total',
    help: 'Connection-seconds of the pool held (its rate: connections busy on average).',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(poolWork(ctx)?.busySeconds ?? 0);
    },
  });
}

export function createMetrics(ctx: Ctx): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const events = new Counter({
    name: 'mta_events_total',
    help: 'Email events appended, by type (queued, sent, delivered, bounced…).',
    labelNames: ['type'],
    registers: [registry],
  });
  onEmailEvent(ctx, (_db, ev) => events.inc({ type: ev.type }));
  queueGauges(ctx, registry);
  storeMetrics(ctx, registry);
  const http = new Histogram({
    name: 'mta_http_request_duration_seconds',
    help: 'HTTP request durations by method, route and status.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const mount: MountFn = (koa) => {
    koa.use(async (c: Koa.Context, next) => {
      if (
        c.path === '/metrics' &&
        c.method === 'GET' &&
        metricsAllowed(ctx.config.metricsToken, c.get('Authorization'), c.socket.remoteAddress ?? '')
      ) {
        c.set('Cache-Control', 'no-store');
        c.type = registry.contentType;
        const extra = extraRegistries.get(ctx.db) ?? [];
        c.body = extra.length ? await Registry.merge([registry, ...extra]).metrics() : await registry.metrics();
        return;
      }
      const end = http.startTimer({ method: c.method });
      let status = 0;
      try {
        await next();
        status = c.status;
      } catch (err) {
        status = err instanceof ApiError ? err.status : 500;
        throw err;
      } finally {
        const route =
          (c as Koa.Context & { _matchedRoute?: string })._matchedRoute ??
          (c.path.startsWith('/dashboard') ? '/dashboard' : 'other');
        end({ route: String(route), status: String(status) });
      }
    });
  };
  return { registry, mount };
}
