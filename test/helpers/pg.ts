// A throwaway PostgreSQL cluster for tests and benchmarks: Debian's binaries (/usr/lib/postgresql/N/bin), `initdb`
// into a fresh temp folder, trust auth on loopback and on a unix socket inside that folder, fsync on (durability
// figures must be real), a free TCP port, started with `pg_ctl -w`. As root (here and in CI) initdb and pg_ctl run as
// the `postgres` OS user (PostgreSQL refuses to run as root). The cluster is stopped and its folder removed by stop(),
// on process exit, and by the next startPg() of any process if its owner died without cleaning up.
//   const pg = await startPg();                  // { url: 'postgres://postgres@127.0.0.1:PORT/postgres', stop() }
//   const url = await createDatabase(pg.url);    // a fresh empty database per test (CREATE DATABASE)
// sharedPg() starts one cluster per process (or uses MTA_TEST_PG_URL when set) for root hooks and test files alike.
import { execFile, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);
const PREFIX = 'mta-pg-';

export interface PgCluster {
  /** Connection URL of the cluster's `postgres` database, superuser `postgres`, no password. */
  url: string;
  port: number;
  /** The temp folder: data/, sock/ (unix socket), log. Removed by stop(). */
  dir: string;
  stop(): Promise<void>;
  /** Shuts the server down (`pg_ctl stop -m fast`), keeping its data: a database outage. */
  pause?(): Promise<void>;
  /** Starts it again on the same port after pause(). */
  resume?(): Promise<void>;
}

/** The bin folder of the newest PostgreSQL installed the Debian way, or undefined when there is none. */
export function pgBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  let versions: string[];
  try {
    versions = fs.readdirSync(root);
  } catch {
    return undefined;
  }
  const found = versions
    .filter((v) => /^\d+(\.\d+)?$/.test(v) && fs.existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => parseFloat(b) - parseFloat(a));
  return found.length ? path.join(root, found[0], 'bin') : undefined;
}

const isRoot = () => process.getuid?.() === 0;

/** uid and gid of the `postgres` OS user (Debian's package creates it). */
function postgresUser(): { uid: number; gid: number } {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root, but there is no `postgres` OS user to run PostgreSQL as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** argv for running a PostgreSQL program: as the postgres user when we are root, directly otherwise. */
function argv(bin: string, prog: string, args: string[]): [string, string[]] {
  const exe = path.join(bin, prog);
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', exe, ...args]] : [exe, args];
}

async function pgRun(bin: string, dir: string, prog: string, args: string[], timeout = 120_000): Promise<string> {
  const [cmd, a] = argv(bin, prog, args);
  try {
    const { stdout } = await run(cmd, a, { cwd: dir, timeout, env: { ...process.env, LC_ALL: 'C' } });
    return stdout;
  } catch (err: any) {
    let log = '';
    try {
      log = fs.readFileSync(path.join(dir, 'log'), 'utf8').slice(-2000);
    } catch {
      /* no log yet */
    }
    throw new Error(
      `${prog} ${args.join(' ')} failed: ${err.stderr || err.message}${log ? `\nserver log:\n${log}` : ''}`,
      { cause: err },
    );
  }
}

function pgRunSync(bin: string, dir: string, prog: string, args: string[]): void {
  const [cmd, a] = argv(bin, prog, args);
  try {
    execFileSync(cmd, a, { cwd: dir, stdio: 'ignore', timeout: 30_000 });
  } catch {
    /* best effort at exit */
  }
}

/** A TCP port free on 127.0.0.1 right now (PostgreSQL cannot listen on port 0: bind 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

// Clusters of this process still running, stopped synchronously on exit.
const live = new Map<string, string>(); // dir -> bin
let exitHooked = false;

function stopSync(dir: string, bin: string): void {
  if (fs.existsSync(path.join(dir, 'data', 'postmaster.pid')))
    pgRunSync(bin, dir, 'pg_ctl', ['-D', path.join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  fs.rmSync(dir, { recursive: true, force: true });
}

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  const cleanup = () => {
    for (const [dir, bin] of live) stopSync(dir, bin);
    live.clear();
  };
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSig = () => {
      cleanup();
      process.removeListener(sig, onSig);
      // Nobody else handles it: die of the signal as we would have without this handler.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSig);
  }
}

/** Stops and removes clusters left by processes that died without cleaning up (their owner pid is gone). */
function reapOrphans(bin: string): void {
  const tmp = os.tmpdir();
  let names: string[];
  try {
    names = fs.readdirSync(tmp).filter((n) => n.startsWith(PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const dir = path.join(tmp, name);
    let owner: number;
    try {
      owner = Number(fs.readFileSync(path.join(dir, 'owner.pid'), 'utf8'));
    } catch {
      continue; // being set up right now, or not ours
    }
    if (!owner || owner === process.pid) continue;
    try {
      process.kill(owner, 0);
      continue; // owner alive
    } catch (err: any) {
      if (err.code === 'EPERM') continue;
    }
    stopSync(dir, bin);
  }
}

export interface StartPgOptions {
  /** Extra postgresql.conf settings, e.g. { max_connections: '300' }. */
  settings?: Record<string, string>;
}

/** Starts a fresh cluster; throws when no PostgreSQL binaries are installed (check pgBinDir() first to skip). */
export async function startPg(opts: StartPgOptions = {}): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin) throw new Error('no PostgreSQL found in /usr/lib/postgresql/*/bin (apt-get install postgresql)');
  reapOrphans(bin);
  hookExit();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), PREFIX));
  live.set(dir, bin);
  try {
    const data = path.join(dir, 'data');
    const sock = path.join(dir, 'sock');
    fs.mkdirSync(sock);
    if (isRoot()) {
      const { uid, gid } = postgresUser();
      fs.chownSync(dir, uid, gid);
      fs.chownSync(sock, uid, gid);
    }
    // --no-sync: the empty template cluster need not reach the disk; the server itself runs with fsync on.
    await pgRun(bin, dir, 'initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--locale=C', // byte order for text, as SQLite's BINARY collation
      '--no-sync',
    ]);
    fs.writeFileSync(
      path.join(data, 'pg_hba.conf'),
      'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n',
    );
    const settings: Record<string, string> = {
      listen_addresses: "'127.0.0.1'",
      unix_socket_directories: `'${sock}'`,
      fsync: 'on',
      synchronous_commit: 'on',
      full_page_writes: 'on',
      max_connections: '200',
      ...opts.settings,
    };
    fs.appendFileSync(
      path.join(data, 'postgresql.conf'),
      '\n# test/helpers/pg.ts\n' +
        Object.entries(settings)
          .map(([k, v]) => `${k} = ${v}\n`)
          .join(''),
    );
    fs.writeFileSync(path.join(dir, 'owner.pid'), String(process.pid));
    // The port is free when picked but may be taken before the server binds it: try a few.
    let port = 0;
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await pgRun(bin, dir, 'pg_ctl', [
          '-D',
          data,
          '-l',
          path.join(dir, 'log'),
          '-w',
          '-t',
          '60',
          '-o',
          `-p ${port}`,
          'start',
        ]);
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    let stopped = false;
    const ctl = (args: string[]) => pgRun(bin, dir, 'pg_ctl', ['-D', data, ...args], 60_000).then(() => {});
    return {
      url,
      port,
      dir,
      pause: () => ctl(['-m', 'fast', '-w', 'stop']),
      resume: () => ctl(['-l', path.join(dir, 'log'), '-w', '-t', '60', '-o', `-p ${port}`, 'start']),
      async stop() {
        if (stopped) return;
        stopped = true;
        try {
          await pgRun(bin, dir, 'pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'], 60_000);
        } finally {
          live.delete(dir);
          stopSync(dir, bin);
        }
      },
    };
  } catch (err) {
    live.delete(dir);
    stopSync(dir, bin);
    throw err;
  }
}

/**
 * Creates a database in the cluster of `url` and returns its URL (name: given, or a fresh random one). Empty, or a
 * copy of `template` (a database of the same cluster nobody is connected to): copying one that already holds the
 * migrated schema is cheaper than migrating each new database (here ~0.4 s per copy vs ~1 s of migrations, load 7).
 */
export async function createDatabase(url: string, name?: string, opts: { template?: string } = {}): Promise<string> {
  const db = name ?? `t_${crypto.randomBytes(6).toString('hex')}`;
  const quote = (id: string) => `"${id.replace(/"/g, '""')}"`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${quote(db)}${opts.template ? ` TEMPLATE ${quote(opts.template)}` : ''}`);
  } finally {
    await client.end();
  }
  created.push({ server: url, db });
  const u = new URL(url);
  u.pathname = '/' + encodeURIComponent(db);
  return u.toString();
}

/** Databases made by createDatabase in this process: dropped by stopSharedPg when the server is not our own. */
const created: { server: string; db: string }[] = [];

let shared: Promise<PgCluster> | undefined;
/**
 * One cluster for the whole process, started on first use (MTA_TEST_PG_URL, when set, names an existing server to use
 * instead: nothing is started or stopped then). Stopped on process exit, or by stopSharedPg().
 */
export function sharedPg(): Promise<PgCluster> {
  const given = process.env.MTA_TEST_PG_URL;
  if (given && !shared) {
    const port = Number(new URL(given).port || 5432);
    shared = Promise.resolve({ url: given, port, dir: '', stop: async () => {} });
  }
  if (!shared) shared = startPg();
  return shared;
}

export async function stopSharedPg(): Promise<void> {
  const s = shared;
  shared = undefined;
  if (!s) return;
  const c = await s;
  // A server named by MTA_TEST_PG_URL outlives the run: leave it as found (hundreds of left-over databases keep its
  // autovacuum launcher busy and slow every later run on the machine).
  if (c.dir === '') await dropCreated(c.url);
  await c.stop();
}

async function dropCreated(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // newest first: a template goes after the copies made from it
    for (const { server, db } of created.splice(0).reverse())
      if (server === url)
        await client.query(`DROP DATABASE IF EXISTS "${db.replace(/"/g, '""')}" WITH (FORCE)`).catch(() => {});
  } finally {
    await client.end();
  }
}
