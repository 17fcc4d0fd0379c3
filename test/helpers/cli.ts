// Runs the `mta` executable as a real child process and returns its exit code, stdout and stderr.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { createKeyPlan, createTeamPlan } from '../../src/services/keys.js';
import { runSync } from '../../src/store/op.js';
import { openTestDb, pgUrlFor, seedSqlite, testEngine } from './service.js';
import { insertVerifiedDomain } from './factories.js';
import type { TestDns } from './dns.js';

const run = promisify(execFile);
export const BIN = path.resolve('bin/mta.js');

/** On a PostgreSQL test run, the database standing for the data folder the environment names. */
async function withEngine(env: Record<string, string>): Promise<Record<string, string>> {
  if (testEngine() !== 'pg' || !env.MTA_DATA_DIR || env.MTA_DATABASE_URL) return env;
  return { ...env, MTA_DATABASE_URL: await pgUrlFor(env.MTA_DATA_DIR) };
}

/** Commands that may create a store (the others exit 1 when there is none). */
const CREATORS = new Set(['serve', 'migrate-to-postgres', 'parse-report', 'help']);

/**
 * Runs `mta ARGS`. A command other than serve and migrate-to-postgres opens only a store that exists: the data
 * folder the environment names gets one first, as `mta serve` would have made it (`{ noStore: true }`: not).
 */
export async function mta(
  args: string[],
  env: Record<string, string>,
  opts: { noStore?: boolean; cwd?: string; timeout?: number } = {},
) {
  const dir = env.MTA_DATA_DIR;
  if (dir && !opts.noStore && !CREATORS.has(args[0]) && testEngine() === 'sqlite') seedSqlite(dir);
  env = await withEngine(env);
  try {
    const r = await run(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH!, ...env },
      cwd: opts.cwd,
      timeout: opts.timeout,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/**
 * The environment of an `mta serve` child on loopback: every listener on a free port, the test DNS server, and
 * outbound SMTP to the test MX's port; `extra` adds or overrides settings.
 */
export function loopbackEnv(
  dataDir: string,
  dnsServer: string,
  mxPort: number,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    MTA_DATA_DIR: dataDir,
    MTA_HTTP_PORT: '0',
    MTA_SMTP_PORT: '0',
    MTA_SUBMISSION_PORT: '0',
    MTA_SMTP_HOST: '127.0.0.1',
    MTA_HOSTNAME: 'mta.test',
    MTA_DNS_SERVERS: dnsServer,
    MTA_OUTBOUND_PORT: String(mxPort),
    ...extra,
  };
}

const PARENT_WATCH = path.resolve('test/helpers/parent-watch.cjs');
/** `mta serve` children still running: sent SIGTERM when this process exits (a test that failed before closing one). */
const liveChildren = new Set<ChildProcess>();
let exitHooked = false;
function killChildrenOnExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on('exit', () => {
    for (const c of liveChildren) c.kill('SIGTERM');
  });
}

/**
 * Runs `mta serve` as a child process; resolves with its HTTP base URL once its listening line is logged. `log()` is
 * what it wrote to stderr (its JSON log), `errors()` the lines at error level or above, `died()` whether and how it
 * ended with the end of everything it wrote (stdout and stderr: a bare stack trace too), for a failing test's message.
 */
export async function serveChild(env: Record<string, string>): Promise<{
  child: ChildProcess;
  url: string;
  errors: () => string[];
  log: () => string;
  died: () => string | null;
}> {
  // No scheduled DNS re-check unless the test asks for one: the default (every 5 minutes, on the clock) would fail
  // the test DNS's sender domain whenever a run crosses a multiple of 5 minutes (a 422 domain_not_verified then).
  env = await withEngine({ MTA_DNS_CHECK_CRON: '0 0 1 1 *', ...env });
  // The child ends with this process: told on its exit (below), and on its own when it finds itself orphaned (the
  // preloaded parent-watch.cjs: this process killed before its after hooks closed the child).
  const child = spawn(process.execPath, ['--require', PARENT_WATCH, BIN, 'serve'], {
    env: { PATH: process.env.PATH!, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  liveChildren.add(child);
  killChildrenOnExit();
  let output = ''; // stdout and stderr as they came, the last 20,000 characters
  let ended: string | null = null;
  const keep = (c: unknown) => {
    output = (output + String(c)).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.once('exit', (code, signal) => {
    liveChildren.delete(child);
    ended = `exited ${signal ?? code}`;
  });
  const died = () => (ended === null ? null : `${ended}; its last output:\n${output.slice(-4000)}`);
  return new Promise((resolve, reject) => {
    let buf = '';
    // Lines logged at error level or above (kept for a failing test's message).
    const errors: string[] = [];
    child.stderr!.on('data', (c) => {
      for (const l of String(c).split('\n')) if (/"level":(50|60)/.test(l) && errors.length < 50) errors.push(l);
    });
    const t = setTimeout(() => reject(new Error(`service did not start: ${buf.slice(-2000)}`)), 45_000);
    child.stderr!.on('data', (c) => {
      buf += c;
      const m = /http=([0-9.]+:\d+)/.exec(buf);
      if (m) {
        clearTimeout(t);
        resolve({ child, url: `http://${m[1]}`, errors: () => errors, log: () => buf, died });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`service exited ${code}: ${buf.slice(-2000)}`));
    });
  });
}

/** The environment of an `mta serve` child that sends nothing out (no DNS answers) and limits no rate. */
export const quietEnv = (dataDir: string, extra: Record<string, string> = {}): Record<string, string> => ({
  MTA_DATA_DIR: dataDir,
  MTA_HTTP_PORT: '0',
  MTA_SMTP_PORT: '0',
  MTA_SUBMISSION_PORT: '0',
  MTA_SMTP_HOST: '127.0.0.1',
  MTA_RATE_LIMIT: '0',
  MTA_DNS_SERVERS: '127.0.0.1:9',
  ...extra,
});

/**
 * Before the child starts: a team with a live key (emails:send, emails:read) and the verified domain sender.test,
 * its DKIM record served by `dns`. Answers the key.
 */
export async function liveSender(env: Record<string, string>, dns: TestDns, teamName: string): Promise<string> {
  const db = await openTestDb(env.MTA_DATA_DIR);
  const ctx = { db, config: loadConfig({ env }), now: Date.now, log: pino({ level: 'silent' }) };
  const team = runSync(createTeamPlan(ctx, teamName));
  const key = runSync(createKeyPlan(ctx, team.id, { mode: 'live', scopes: ['emails:send', 'emails:read'] })).key;
  const dom = insertVerifiedDomain(db, team.id, 'sender.test');
  dns.set(`${dom.selector}._domainkey.sender.test`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
  db.close();
  return key;
}
