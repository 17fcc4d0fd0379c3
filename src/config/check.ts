// Checks `mta serve` makes before it starts (the other commands load the settings without them): the TLS files
// readable and valid, and the warnings of operations.md ("Running it in production"): an MTA_* variable the
// service does not know, a retired setting, a host name that is not fully qualified.
import crypto from 'node:crypto';
import fs from 'node:fs';
import tls from 'node:tls';
import { ConfigError, ENV_ONLY } from './load.js';
import { envNameOf } from './accepts.js';
import { ENV, type Config } from './schema.js';

/** Set by the build for the precompiled service (scripts/build.mjs), not by an operator. */
const INTERNAL = ['MTA_PREBUILT_WORKER'];

function readPem(name: string, file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      `invalid configuration: ${name}: a readable PEM file; cannot read ${file} (${e.code ?? e.message})`,
    );
  }
}

/**
 * The SMTP listeners' certificate and key, read now (at start, and again on SIGHUP): readable, PEM, and of one pair.
 * Throws ConfigError naming the variable and the file. null: none configured (smtp-server's bundled certificate).
 */
export function readTlsPair(cfg: Config): { key: Buffer; cert: Buffer } | null {
  if (!cfg.smtpTlsKeyFile || !cfg.smtpTlsCertFile) return null;
  const key = readPem('MTA_SMTP_TLS_KEY_FILE', cfg.smtpTlsKeyFile);
  const cert = readPem('MTA_SMTP_TLS_CERT_FILE', cfg.smtpTlsCertFile);
  const step = (name: string, accepts: string, fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      throw new ConfigError(`invalid configuration: ${name}: ${accepts}; ${(err as Error).message}`);
    }
  };
  step('MTA_SMTP_TLS_KEY_FILE', `a PEM private key (${cfg.smtpTlsKeyFile})`, () => crypto.createPrivateKey(key));
  step('MTA_SMTP_TLS_CERT_FILE', `a PEM certificate (${cfg.smtpTlsCertFile})`, () => new crypto.X509Certificate(cert));
  step(
    'MTA_SMTP_TLS_KEY_FILE',
    `the private key of the certificate in MTA_SMTP_TLS_CERT_FILE (${cfg.smtpTlsKeyFile}, ${cfg.smtpTlsCertFile})`,
    () => tls.createSecureContext({ key, cert }),
  );
  return { key, cert };
}

/** MTA_TLS_CA_FILE's certificates (PEM text), read at start; ConfigError naming the variable. undefined: unset. */
export function readCaFile(cfg: Pick<Config, 'tlsCaFile'>): string | undefined {
  if (!cfg.tlsCaFile) return undefined;
  const pem = readPem('MTA_TLS_CA_FILE', cfg.tlsCaFile).toString('utf8');
  try {
    new crypto.X509Certificate(pem);
  } catch (err) {
    throw new ConfigError(
      `invalid configuration: MTA_TLS_CA_FILE: PEM CA certificates (${cfg.tlsCaFile}); ${(err as Error).message}`,
    );
  }
  return pem;
}

/** Edit distance, for "did you mean" (names are short). */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length];
}

/**
 * Warnings for the start's log: unknown MTA_* variables (ignored), retired settings (ignored), a host name that is
 * not fully qualified.
 */
export function startWarnings(cfg: Config, env: NodeJS.ProcessEnv): string[] {
  const known = [...Object.keys(ENV), ...ENV_ONLY];
  const out: string[] = [];
  for (const name of Object.keys(env)
    .filter((n) => n.startsWith('MTA_'))
    .sort()) {
    if (known.includes(name) || INTERNAL.includes(name)) continue;
    const near = known.find((k) => distance(k, name) <= 2);
    out.push(
      `unknown variable ${name} ignored: not a setting of this service${near ? ` (did you mean ${near}?)` : ''} (docs/operations.md "Settings")`,
    );
  }
  const retired = retiredGiven(cfg, env);
  if (retired.length)
    out.push(
      `${retired.join(', ')} ignored: HTTP workers were retired on 2026-11-30 (issue 38; slower than one process once the event loop stopped waiting for PostgreSQL); one process serves HTTP; remove the setting (docs/operations.md "HTTP workers")`,
    );
  if (!cfg.hostname.replace(/\.$/, '').includes('.'))
    out.push(
      `MTA_HOSTNAME "${cfg.hostname}" is not a fully qualified name: it is the EHLO name and goes into the SPF and MX records suggested to teams; set MTA_HOSTNAME to this host's public name (mail.example.com)`,
    );
  return out;
}

/**
 * The retired settings given (schema.ts: accepted, ignored), as the operator wrote them: `MTA_HTTP_WORKERS=2`, or
 * `httpWorkers: 2` from the config file. Issue 38 item 3: with nothing left for the event loop to wait for on the
 * store, a node of one process answered more and faster than one with workers (BENCHMARKS.md "Session 22: the
 * synchronous connection"), and the workers were removed.
 */
function retiredGiven(cfg: Config, env: NodeJS.ProcessEnv): string[] {
  return (['httpWorkers', 'httpLeaseMs'] as const).flatMap((key) => {
    const name = envNameOf(key)!;
    if (env[name]) return [`${name}=${env[name]}`];
    return cfg[key] === undefined ? [] : [`${key}: ${JSON.stringify(cfg[key])}`];
  });
}

/** What `mta serve` checks before starting; throws ConfigError, returns the warnings to log. */
export function checkBeforeStart(cfg: Config, env: NodeJS.ProcessEnv = process.env): string[] {
  readTlsPair(cfg);
  return startWarnings(cfg, env);
}
