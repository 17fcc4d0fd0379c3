// Starts the real service on port 0 with a fresh SQLite file in a temp folder, and offers a small HTTP client for
// the API (each /v1 answer checked against the OpenAPI document, test/helpers/contract.ts) plus factories for
// teams, keys and credits.
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { startService, type Running, type FeatureFactory } from '../../src/service.js';
import { createTeamPlan, createKeyPlan, type Scope } from '../../src/services/keys.js';
import { runSync } from '../../src/store/op.js';
import { addCreditsPlan } from '../../src/services/credits.js';
import { openDb, type DB } from '../../src/store/db.js';
import { createDatabase, sharedPg } from './pg.js';
import { assertDescribed, parseBody } from './contract.js';

export interface TestClock {
  now: () => number;
  advance(ms: number): void;
  set(ms: number): void;
}
export function testClock(start = Date.now()): TestClock {
  let offset = start - Date.now();
  return {
    now: () => Date.now() + offset,
    advance: (ms) => {
      offset += ms;
    },
    set: (ms) => {
      offset = ms - Date.now();
    },
  };
}

import { tempDir } from './temp.js';
export { tempDir };

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export class TestService {
  constructor(
    readonly svc: Running,
    readonly config: Config,
  ) {}
  get url() {
    return this.svc.url;
  }
  get ctx() {
    return this.svc.ctx;
  }
  get db() {
    return this.svc.db;
  }

  async api<T = any>(
    method: string,
    p: string,
    opts: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    let body: string | undefined = opts.raw;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const send = () => fetch(this.url + p, { method, headers, body });
    // A reused keep-alive connection the server closed as it went idle (after a long synchronous stretch, e.g. a
    // purge): a GET is sent again on a new one, as any HTTP client would.
    const res = await send().catch((err: { cause?: { code?: string } }) => {
      // undici says ECONNRESET, or UND_ERR_SOCKET ("other side closed") when the close came between two requests
      if (method !== 'GET' || !['ECONNRESET', 'UND_ERR_SOCKET'].includes(err.cause?.code ?? '')) throw err;
      return send();
    });
    const parsed = parseBody(await res.text());
    // Every /v1 answer is checked against the OpenAPI document: one it does not describe fails the test; and a
    // body the server accepted must be one the document takes (its request schemas no stricter than the server).
    assertDescribed(this.ctx, method, p, res.status, parsed, opts.body);
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  team(name = `team-${Math.random().toString(36).slice(2, 8)}`) {
    return runSync(createTeamPlan(this.ctx, name));
  }
  key(teamId: string, mode: 'test' | 'live' = 'test', scopes?: Scope[]) {
    return runSync(createKeyPlan(this.ctx, teamId, { mode, scopes })).key;
  }
  credits(teamId: string, amount: number) {
    return runSync(addCreditsPlan(this.ctx, teamId, amount, null));
  }
  close() {
    return this.svc.close();
  }
}

/** The engine the test run uses: SQLite unless MTA_TEST_ENGINE=pg (then a throwaway PostgreSQL cluster). */
export const testEngine = (): 'sqlite' | 'pg' => (process.env.MTA_TEST_ENGINE === 'pg' ? 'pg' : 'sqlite');

const pgDatabases = new Map<string, Promise<string>>();
/**
 * On PostgreSQL, the database standing for a data folder (created on first use): a test that restarts the
 * service on the same data folder finds the same store, as with SQLite.
 */
export function pgUrlFor(dataDir: string): Promise<string> {
  let url = pgDatabases.get(dataDir);
  if (!url) {
    url = sharedPg().then((c) => fromTemplate(c.url));
    pgDatabases.set(dataDir, url);
  }
  return url;
}

let template: Promise<string> | undefined;
/** A fresh database copied from one migrated once per run (CREATE DATABASE … TEMPLATE: no migrations per test). */
async function fromTemplate(server: string): Promise<string> {
  template ??= createDatabase(server, `mta_template_${process.pid}`).then((u) => {
    openDb('', { databaseUrl: u }).close();
    return new URL(u).pathname.slice(1);
  });
  return createDatabase(server, undefined, { template: await template });
}

let sqliteTemplate: string | undefined;
/**
 * SQLite: a data folder without a store gets a copy of one migrated once per process (the file copy costs a fraction
 * of running every migration, with its fsyncs, for each test service), as PostgreSQL's copies from a template above.
 * A migrated store holds no secret or key until first used (store/settings.ts makes them then), so copies share none.
 */
export function seedSqlite(dataDir: string): void {
  const file = path.join(dataDir, 'mta.sqlite');
  if (fs.existsSync(file)) return;
  if (sqliteTemplate === undefined) {
    const dir = tempDir('mta-template-');
    openDb(dir).close(); // closing the last connection checkpoints the WAL into the file and removes it
    sqliteTemplate = path.join(dir, 'mta.sqlite');
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  fs.copyFileSync(sqliteTemplate, file);
}

/** Opens the store of a data folder as the service would on this run's engine (for tests that inspect it). */
export async function openTestDb(dataDir: string): Promise<DB> {
  if (testEngine() === 'pg') return openDb(dataDir, { databaseUrl: await pgUrlFor(dataDir) });
  seedSqlite(dataDir);
  return openDb(dataDir);
}

export async function startTestService(
  opts: {
    env?: Record<string, string>;
    overrides?: Partial<Config>;
    now?: () => number;
    features?: FeatureFactory[];
    logLevel?: string;
    dataDir?: string;
    /** PostgreSQL: the service's pool of asynchronous plans (default: the service's; 0: none) */
    pgPoolSize?: number;
    /** PostgreSQL: the submit turns and the credit lock's holders on the pool (default: the service's, on) */
    pooledTurns?: boolean;
  } = {},
): Promise<TestService> {
  const dataDir = opts.dataDir ?? tempDir();
  if (testEngine() === 'sqlite') seedSqlite(dataDir);
  const config = loadConfig({
    env: {
      MTA_DATA_DIR: dataDir,
      MTA_HTTP_PORT: '0',
      MTA_SMTP_PORT: '0',
      MTA_SMTP_HOST: '127.0.0.1',
      MTA_SUBMISSION_PORT: '0',
      MTA_SUBMISSION_HOST: '127.0.0.1',
      MTA_HOSTNAME: 'mta.test',
      MTA_ALLOW_PRIVATE_WEBHOOKS: '1',
      // DNS never leaves loopback in tests: a dead local resolver unless the test brings TestDns.
      MTA_DNS_SERVERS: '127.0.0.1:9',
      ...(testEngine() === 'pg' ? { MTA_DATABASE_URL: await pgUrlFor(dataDir) } : {}),
      ...(opts.env ?? {}),
    },
    overrides: opts.overrides,
  });
  const log = pino({ level: opts.logLevel ?? process.env.TEST_LOG_LEVEL ?? 'silent' });
  const svc = await startService(config, {
    now: opts.now,
    log,
    features: opts.features,
    pgPoolSize: opts.pgPoolSize,
    pooledTurns: opts.pooledTurns,
  });
  return new TestService(svc, config);
}
