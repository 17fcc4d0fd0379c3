// Loads the configuration: config/default.json ← optional JSON file ← MTA_* environment.
// Throws ConfigError naming the setting (and its variable) when a value is invalid.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Compile } from 'typebox/compile';
import { ConfigSchema, ENV, MIN_DASHBOARD_PASSWORD, type Config } from './schema.js';
import { trustedProxyList } from './proxies.js';
import { ipPoolsProblem, parseIpPools } from './ip-pools.js';

export class ConfigError extends Error {}

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
      if (!Number.isFinite(n) || (kind === 'int' && !Number.isInteger(n))) {
        throw new ConfigError(
          `invalid ${name}=${JSON.stringify(raw)}: expected a${kind === 'int' ? 'n integer' : ' number'}`,
        );
      }
      out[key] = n;
    } else if (kind === 'bool') {
      if (!['1', '0', 'true', 'false', 'yes', 'no'].includes(raw))
        throw new ConfigError(`invalid ${name}=${JSON.stringify(raw)}: expected 1 or 0`);
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

function envNameOf(key: string): string {
  const hit = Object.entries(ENV).find(([, [k]]) => k === key);
  return hit ? ` (${hit[0]})` : '';
}

export function loadConfig(opts: { file?: string; env?: NodeJS.ProcessEnv; overrides?: Partial<Config> } = {}): Config {
  const env = opts.env ?? process.env;
  const merged: Record<string, unknown> = { ...readJson(DEFAULTS) };
  if (opts.file) Object.assign(merged, readJson(opts.file));
  Object.assign(merged, fromEnv(env), opts.overrides ?? {});
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
    const extra = unknown
      ? `unknown setting(s) ${JSON.stringify((unknown.params as { additionalProperties: string[] }).additionalProperties)}`
      : `${key}${envNameOf(key)}: ${e.message}`;
    throw new ConfigError(`invalid configuration: ${extra}`);
  }
  const cfg = merged as Config;
  if (cfg.retryMaxSeconds < cfg.retryMinSeconds)
    throw new ConfigError('invalid configuration: retryMaxSeconds (MTA_RETRY_MAX_SECONDS) must be >= retryMinSeconds');
  if (cfg.httpWorkers > 0 && !cfg.databaseUrl)
    throw new ConfigError(
      'invalid configuration: httpWorkers (MTA_HTTP_WORKERS) needs PostgreSQL (MTA_DATABASE_URL): processes share the store through it',
    );
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
