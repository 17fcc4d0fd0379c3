// Builds and runs the whole service in one process: store, HTTP API and the features that plug in
// routes, mounts and components (delivery loop, inbound SMTP, webhooks, jobs). `close()` drains them in reverse order.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { isPg, openDb, storeWarnings, type DB } from './store/db.js';
import { buildApp } from './http/app.js';
import { createLogger } from './log.js';
import type { Ctx } from './services/context.js';
import type { Component } from './types/component.js';
import type { FeatureFactory } from './features/feature.js';
import { feature as api } from './features/api.js';
import { FEATURES } from './features.js';
import { parseReport } from './inbound/parse.js';
import { listenError } from './core/listen-error.js';
import { drainable } from './http/drain.js';
import { PlanPool, usePool } from './store/pg/plan-driver.js';
import { usePooledTurns } from './store/pg/pooled-turns.js';
import { pgPooledTurns, pgPoolSize } from './config/load.js';

export type { Component, FeatureFactory };
export type { Feature } from './features/feature.js';

export interface Running {
  ctx: Ctx;
  db: DB;
  url: string;
  httpPort: number;
  components: Component[];
  /** The HTTP listener (read-only use: tests inspect its limits). */
  server: http.Server;
  /** SIGHUP: each component re-reads its files (the SMTP listeners' TLS certificate and key). */
  reload(): void;
  close(): Promise<void>;
}

/** `features`: those to run besides the API feature, which is always on (default: FEATURES). */
export interface StartOptions {
  now?: () => number;
  log?: Logger;
  features?: FeatureFactory[];
  /** PostgreSQL: connections of the pool of asynchronous plans (default MTA_PG_POOL_SIZE, else 4; 0: none). */
  pgPoolSize?: number;
  /**
   * PostgreSQL with a pool: the group-commit turns and every holder of the credit lock run on it (default
   * MTA_PG_POOLED_TURNS: on unless `off`).
   */
  pooledTurns?: boolean;
}

export async function startService(config: Config, opts: StartOptions = {}): Promise<Running> {
  const log = opts.log ?? createLogger(config.logLevel);
  const db = openDb(config.dataDir, { synchronous: config.sqliteSynchronous, databaseUrl: config.databaseUrl });
  // PostgreSQL: each turn's COMMIT is sent without waiting for its answer (MTA_PG_COMMIT_AHEAD=off: waited for).
  if (isPg(db)) db.commitAhead ??= true;
  // PostgreSQL: the connections of the plans run asynchronously: the delivery loop's claims, lease confirmations and
  // next due time, bookkeeping committed without waiting for its WAL flush as lightTx does (docs/async-store.md).
  const size = isPg(db) ? (opts.pgPoolSize ?? pgPoolSize()) : 0;
  const pool = size > 0 ? new PlanPool(config.databaseUrl!, size, { light: true }) : null;
  // The submit turns on the pool, several in flight, and with them every other transaction that takes the team's
  // credit lock or writes the rows they lock: result batches, cancels, queue actions, feedback (MTA_PG_POOLED_TURNS,
  // on by default; off: all of them on the synchronous connection, as before).
  const pooledTurns = pool !== null && (opts.pooledTurns ?? pgPooledTurns());
  usePool(db, pool, { locking: pooledTurns });
  if (pooledTurns) usePooledTurns(db, pool, Math.max(1, size - 1));
  const ctx: Ctx = { db, config, now: opts.now ?? Date.now, log, parseReport };
  for (const w of storeWarnings(db)) log.warn(w);
  const features = [api, ...(opts.features ?? FEATURES)].map((f) => f(ctx));
  const components = features.flatMap((f) => f.components ?? []);
  let up = false;
  const koa = buildApp(ctx, {
    routes: features.flatMap((f) => f.routes ?? []),
    mounts: features.flatMap((f) => f.mounts ?? []),
    healthy: () => up,
  });
  // A client gets 20 s for its headers and 60 s for the whole request (Node's default lets a body trickle
  // for 5 minutes), so slow senders cannot pile up open connections.
  const gate = drainable(ctx, koa.callback());
  const server = http.createServer({ headersTimeout: 20_000, requestTimeout: 60_000 }, gate.handle);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => {
      void pool?.end();
      db.close();
      reject(listenError('HTTP', 'MTA_HTTP_HOST, MTA_HTTP_PORT', config.httpHost, config.httpPort, err));
    });
    server.listen(config.httpPort, config.httpHost, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const started: Component[] = [];
  try {
    for (const c of components) {
      await c.start();
      started.push(c);
    }
  } catch (err) {
    await stopAll(started, log);
    server.close();
    void pool?.end();
    db.close();
    throw err;
  }
  up = true;
  const listeners = [`http=${host}:${addr.port}`, ...components.map((c) => c.address?.()).filter(Boolean)];
  log.info({ listeners }, `listening: ${listeners.join(' ')}`);
  let closing: Promise<void> | null = null;
  return {
    ctx,
    db,
    url: `http://${host}:${addr.port}`,
    httpPort: addr.port,
    components,
    server,
    reload: () => {
      for (const c of started) c.reload?.();
    },
    close: () =>
      (closing ??= (async () => {
        up = false;
        // New work stops first: the listener takes no new connection, a request on an open one is answered 503
        // shutting_down (Connection: close); requests in flight finish while the components drain.
        gate.drain();
        const closed = new Promise<void>((r) => server.close(() => r()));
        server.closeIdleConnections();
        for (const c of started) c.quiesce?.();
        await stopAll(started, log);
        await Promise.race([closed, new Promise((r) => setTimeout(r, DRAIN_HTTP_MS).unref())]);
        server.closeAllConnections();
        await closed;
        usePooledTurns(db, null);
        usePool(db, null);
        await pool?.end();
        db.close();
      })()),
  };
}

/** Longest the HTTP requests in flight get to finish once the components are stopped. */
const DRAIN_HTTP_MS = 5_000;

async function stopAll(components: Component[], log: Logger) {
  for (const c of [...components].reverse()) {
    try {
      await c.stop();
    } catch (err) {
      log.error({ err, component: c.name }, 'stop failed');
    }
  }
}
