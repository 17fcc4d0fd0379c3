// Loads the configuration: config/default.json ← optional JSON file ← MTA_* environment.
// Throws ConfigError naming the setting (and its variable) when a value is invalid.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Compile } from 'typebox/compile';
import { ConfigSchema, ENV, MIN_DASHBOARD_PASSWORD, type Config } from './schema.js';
import { trustedProxyList } from './proxies.js';
import { ipPoolsProblem, parseIpPools } from './ip-pools.js';
import { accepts, envNameOf, isListenHost } from './accepts.js';

export class ConfigError extends Error {}

/**
 * The refusal of a bad value: the variable first when the environment gave it (`MTA_LOG_LEVEL: one of …`), else the
 * setting's key (and its variable); then what it accepts and what it got.
 */
function refuse(key: string, value: unknown, fromEnv: boolean, fallback?: string): ConfigError {
  const name = envNameOf(key);
  const what = accepts(key) ?? fallback ?? 'another value';
  const got = value === undefined ? '' : `; got ${JSON.stringify(value)}`;
  if (name && fromEnv) return new ConfigError(`invalid configuration: ${name}: ${what}${got} (setting ${key})`);
  return new ConfigError(`invalid configuration: ${key}${name ? ` (${name})` : ''}: ${what}${got}`);
}

/** Variables read from the environment only (not settings), besides those of ENV. */
export const ENV_ONLY = [
  'MTA_PG_COMMIT_AHEAD',
  'MTA_PG_POOL_SIZE',
  'MTA_PG_POOLED_TURNS',
  'MTA_PG_CLIENT',
  'MTA_PG_TRACE',
  'MTA_MEMORY_TRACE',
  'MTA_MEMORY_TRACE_MS',
  'MTA_HEAP_GROWING_PERCENT',
  'MTA_FROM_SOURCE',
];

const checker = Compile(ConfigSchema);
const DEFAULTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../config/default.json');

function readJson(file: string): Record<string, unknown> {
  try {
    const v = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
    return v;
  } catch (err) {
    throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
  }
}

function fromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, [key, kind]] of Object.entries(ENV)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    if (kind === 'int' || kind === 'number') {
      const n = Number(raw);
      if (!Number.isFinite(n) || (kind === 'int' && !Number.isInteger(n))) throw refuse(key, raw, true);
      out[key] = n;
    } else if (kind === 'bool') {
      if (!['1', '0', 'true', 'false', 'yes', 'no'].includes(raw)) throw refuse(key, raw, true);
      out[key] = ['1', 'true', 'yes'].includes(raw);
    } else if (kind === 'pools') {
      try {
        out[key] = parseIpPools(raw);
      } catch (err) {
        throw new ConfigError(`invalid ${name}=${JSON.stringify(raw)}: ${(err as Error).message}`);
      }
    } else if (kind === 'list') {
      out[key] = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    } else out[key] = raw;
  }
  return out;
}

/** Checks the schema cannot express: listener hosts, source IPs, the TLS pair, environment-only switches. */
function checkValues(cfg: Config, env: NodeJS.ProcessEnv, envKeys: Set<string>): void {
  for (const k of ['httpHost', 'smtpHost', 'submissionHost'] as const)
    if (!isListenHost(cfg[k])) throw refuse(k, cfg[k], envKeys.has(k));
  const ip = cfg.sendingIps.find((a) => net.isIP(a) === 0);
  if (ip !== undefined) throw refuse('sendingIps', ip, envKeys.has('sendingIps'));
  if (!cfg.smtpTlsKeyFile !== !cfg.smtpTlsCertFile) {
    const [has, lacks] = cfg.smtpTlsKeyFile
      ? ['MTA_SMTP_TLS_KEY_FILE', 'MTA_SMTP_TLS_CERT_FILE']
      : ['MTA_SMTP_TLS_CERT_FILE', 'MTA_SMTP_TLS_KEY_FILE'];
    throw new ConfigError(
      `invalid configuration: ${lacks}: the other half of ${has} (a certificate and its private key, both PEM files, or neither); it is not set`,
    );
  }
  if (cfg.alertWebhookUrl && !cfg.alertWebhookSecret)
    throw new ConfigError(
      'invalid configuration: MTA_ALERT_WEBHOOK_SECRET: the secret that signs what MTA_ALERT_WEBHOOK_URL receives (whsec_ and base64); it is not set',
    );
  const ahead = env.MTA_PG_COMMIT_AHEAD;
  if (ahead !== undefined && ahead !== '' && ahead !== 'on' && ahead !== 'off')
    throw new ConfigError(
      `invalid configuration: MTA_PG_COMMIT_AHEAD: on or off (or unset); got ${JSON.stringify(ahead)}`,
    );
  pgPoolSize(env);
  pgPooledTurns(env);
  heapGrowingPercent(env);
}

/**
 * Whether `mta serve` on PostgreSQL runs its group-commit turns, and every other holder of the credit and idempotency
 * locks, on the pool (MTA_PG_POOLED_TURNS: on by default; `off`, the operator's way back: all on the synchronous
 * connection, as before session 20; docs/async-store.md step 2).
 */
export function pgPooledTurns(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env.MTA_PG_POOLED_TURNS;
  if (v === undefined || v === '' || v === 'on') return true;
  if (v === 'off') return false;
  throw new ConfigError(`invalid configuration: MTA_PG_POOLED_TURNS: on or off (or unset); got ${JSON.stringify(v)}`);
}

/** PostgreSQL connections `mta serve` keeps for the plans it runs asynchronously (MTA_PG_POOL_SIZE; 0: none). */
export const PG_POOL_SIZE = 4;
export function pgPoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.MTA_PG_POOL_SIZE;
  if (v === undefined || v === '') return PG_POOL_SIZE;
  if (!/^\d+$/.test(v) || Number(v) > 64)
    throw new ConfigError(
      `invalid configuration: MTA_PG_POOL_SIZE: an integer from 0 to 64 (or unset); got ${JSON.stringify(v)}`,
    );
  return Number(v);
}

/**
 * How far `mta serve`'s V8 heaps may grow past what survived the last full collection before the next one, in percent
 * (MTA_HEAP_GROWING_PERCENT, V8's --heap-growing-percent; 0: V8's own factor, which reached 4× at start-up and let a
 * burst of mail fill the old generation with garbage up to ~144 MiB: BENCHMARKS.md "Session 20: peak memory").
 */
export const HEAP_GROWING_PERCENT = 50;
export function heapGrowingPercent(env: NodeJS.ProcessEnv = process.env): number {
  const v = env.MTA_HEAP_GROWING_PERCENT;
  if (v === undefined || v === '') return HEAP_GROWING_PERCENT;
  if (!/^\d+$/.test(v) || Number(v) > 300)
    throw new ConfigError(
      `invalid configuration: MTA_HEAP_GROWING_PERCENT: an integer from 0 to 300 (or unset); got ${JSON.stringify(v)}`,
    );
  return Number(v);
}

export function loadConfig(opts: { file?: string; env?: NodeJS.ProcessEnv; overrides?: Partial<Config> } = {}): Config {
  const env = opts.env ?? process.env;
  const merged: Record<string, unknown> = { ...readJson(DEFAULTS) };
  if (opts.file) Object.assign(merged, readJson(opts.file));
  const given = fromEnv(env);
  const envKeys = new Set(Object.keys(given));
  Object.assign(merged, given, opts.overrides ?? {});
  if (merged.hostname === undefined)
    merged.hostname =
      os
        .hostname()
        .toLowerCase()
        .replace(/[^a-z0-9.-]/g, '-') || 'localhost';
  if (merged.docsUrl === undefined && typeof merged.publicUrl === 'string')
    merged.docsUrl = `${merged.publicUrl.replace(/\/+$/, '')}/docs`;
  if (merged.bounceDomain === undefined) merged.bounceDomain = `bounces.${merged.hostname}`;
  const errors = [...checker.Errors(merged)];
  if (errors.length) {
    const unknown = errors.find((x) => x.keyword === 'additionalProperties');
    const e = errors.find((x) => x.instancePath && x.keyword !== 'boolean') ?? errors[0];
    const key = e.instancePath.split('/')[1] ?? '';
    if (unknown)
      throw new ConfigError(
        `invalid configuration: unknown setting(s) ${JSON.stringify((unknown.params as { additionalProperties: string[] }).additionalProperties)}`,
      );
    const raw = env[envNameOf(key) ?? ''];
    const fromEnv = envKeys.has(key) && !(opts.overrides && key in opts.overrides);
    throw refuse(key, fromEnv && raw !== undefined ? raw : merged[key], fromEnv, e.message);
  }
  const cfg = merged as Config;
  checkValues(cfg, env, envKeys);
  if (cfg.retryMaxSeconds < cfg.retryMinSeconds)
    throw new ConfigError('invalid configuration: retryMaxSeconds (MTA_RETRY_MAX_SECONDS) must be >= retryMinSeconds');
  const pools = ipPoolsProblem(cfg.ipPools);
  if (pools) throw new ConfigError(`invalid configuration: ipPools (MTA_IP_POOLS): ${pools}`);
  if (cfg.dashboardPassword !== '' && [...cfg.dashboardPassword].length < MIN_DASHBOARD_PASSWORD) {
    throw new ConfigError(
      `invalid configuration: dashboardPassword (MTA_DASHBOARD_PASSWORD) must have at least ${MIN_DASHBOARD_PASSWORD} characters, or be empty to turn operator sign-in off`,
    );
  }
  try {
    trustedProxyList(cfg.trustedProxies ?? []);
  } catch (err) {
    throw new ConfigError(`invalid configuration: trustedProxies (MTA_TRUSTED_PROXIES): ${(err as Error).message}`);
  }
  cfg.publicUrl = cfg.publicUrl.replace(/\/+$/, '');
  return cfg;
}
