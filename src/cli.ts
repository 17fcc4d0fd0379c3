// The `mta` command (operations.md): serve, team, key, credits, domain, parse-report, sites, site, ip, queue.
// Results go to stdout only; diagnostics to stderr; failures exit non-zero with a clear message.
import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from './config/load.js';
import { NoStoreError, openDb } from './store/db.js';
import { createLogger } from './log.js';
import { ApiError } from './core/errors.js';
import { createTeam, createKey, listKeys, revokeKey, teamNamed } from './services/keys.js';
import { presentKey } from './services/present.js';
import { addCredits } from './services/credits.js';
import type { Ctx } from './services/context.js';
import type { Config } from './config/schema.js';

/** `open()` opens the store the settings name (never creating one); `config()` reads them (`--config FILE`, MTA_*). */
type Handler = (args: string[], open: () => Ctx, config: () => Config) => Promise<string | void> | string | void;

function opts(args: string[], spec: Record<string, 'string' | 'boolean'>) {
  const options = Object.fromEntries(Object.entries(spec).map(([k, type]) => [k, { type }])) as Record<
    string,
    { type: 'string' | 'boolean' }
  >;
  return parseArgs({ args, options, allowPositionals: true, strict: true });
}

function need(v: unknown, what: string): string {
  if (typeof v !== 'string' || v === '') throw new UsageError(`missing ${what}`);
  return v;
}
class UsageError extends Error {}
/** Refused as asked (exit 2): `mta queue hold|purge` with no filter and no --all. */
class Refused extends Error {}

const QUEUE_FILTERS = {
  team: 'string',
  site: 'string',
  domain: 'string',
  'sender-domain': 'string',
  tag: 'string',
  email: 'string',
  state: 'string',
  'older-than': 'string',
} as const;

/** `mta queue <sub>`: the filters go to services/queue (same checks as the admin API). */
function queueCommand(sub: 'summary' | 'list' | 'hold' | 'release' | 'retry' | 'purge'): Handler {
  return async (args, open) => {
    const { values } = opts(args, {
      ...QUEUE_FILTERS,
      by: 'string',
      limit: 'string',
      all: 'boolean',
      reason: 'string',
    });
    const by = (values.by as string | undefined) ?? 'site';
    if (!['site', 'domain', 'team', 'state'].includes(by)) throw new UsageError('--by is site, domain, team or state');
    const limit = Number(values.limit ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100000) throw new UsageError('--limit is 1 to 100000');
    const q = await import('./services/queue.js');
    const ctx = open();
    const input = Object.fromEntries(Object.keys(QUEUE_FILTERS).map((k) => [k.replace(/-/g, '_'), values[k]]));
    const f = await q.parseFilter(ctx, input);
    if (sub === 'summary') return JSON.stringify(await q.queueSummary(ctx, by as 'site', f), null, 2);
    if (sub === 'list') return JSON.stringify(await q.queueList(ctx, f, limit), null, 2);
    if ((sub === 'hold' || sub === 'purge') && Object.keys(f).length === 0 && values.all !== true)
      throw new Refused(`queue ${sub} with no filter acts on the whole queue: add a filter, or --all`);
    q.writeWebhooksFromThisProcess(ctx);
    return JSON.stringify(
      await q.queueAction(ctx, sub, f, { all: values.all === true, note: values.reason as string | undefined }),
    );
  };
}

/** Command table: "group sub" or "cmd" → handler. Features add their commands here. */
export const COMMANDS: Record<string, Handler> = {
  'team create': async (args, open) => {
    const name = need(opts(args, {}).positionals[0], 'team NAME');
    return (await createTeam(open(), name)).id;
  },
  'key create': async (args, open) => {
    const { values } = opts(args, { team: 'string', mode: 'string', scopes: 'string', name: 'string' });
    const teamName = need(values.team, '--team NAME');
    const ctx = open();
    const team = await teamNamed(ctx, teamName);
    const mode = (values.mode ?? 'test') as 'test' | 'live';
    const scopes =
      typeof values.scopes === 'string'
        ? values.scopes
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : undefined;
    return (await createKey(ctx, team.id, { mode, scopes, name: (values.name as string | undefined) ?? null })).key;
  },
  'key list': async (args, open) => {
    const teamName = need(opts(args, { team: 'string' }).values.team, '--team NAME');
    const ctx = open();
    const team = await teamNamed(ctx, teamName);
    // Every key of the team (test and live, revoked too); never the secret nor its hash.
    const keys = (await listKeys(ctx, { teamId: team.id, mode: 'live' })).map((k) => {
      const { id, name, mode, scopes, created_at, last_used_at, revoked_at } = presentKey(k);
      return { id, name, mode, scopes, created_at, last_used_at, revoked_at };
    });
    return JSON.stringify(keys, null, 2);
  },
  'key revoke': async (args, open) => {
    const id = need(opts(args, {}).positionals[0], 'KEY_ID');
    await revokeKey(open(), id);
  },
  'credits add': async (args, open) => {
    const { values } = opts(args, { team: 'string', amount: 'string', usd: 'string' });
    const teamName = need(values.team, '--team NAME');
    const amount = Number(need(values.amount, '--amount N'));
    const usd = values.usd === undefined ? null : Number(values.usd);
    const ctx = open();
    return JSON.stringify(await addCredits(ctx, (await teamNamed(ctx, teamName)).id, amount, usd));
  },
  'domain add': async (args, open) => {
    const { values, positionals } = opts(args, { team: 'string' });
    const teamName = need(values.team, '--team NAME');
    const domain = need(positionals[0], 'DOMAIN');
    const ctx = open();
    const team = await teamNamed(ctx, teamName);
    const { addDomain } = await import('./services/domains.js');
    return JSON.stringify(await addDomain(ctx, team.id, domain), null, 2);
  },
  'domain verify': async (args, open) => {
    const domain = need(opts(args, {}).positionals[0], 'DOMAIN');
    const { verifyDomainByName } = await import('./services/domain-checks.js');
    return JSON.stringify(await verifyDomainByName(open(), domain), null, 2);
  },
  dmarc: async (args, open) => {
    const { values } = opts(args, { domain: 'string', days: 'string' });
    const days = Number(values.days ?? 7);
    if (!Number.isInteger(days) || days < 1 || days > 90) throw new UsageError('--days is 1 to 90');
    const name = need(values.domain, '--domain NAME');
    const { domainNamedForCli, summaryOf } = await import('./services/dmarc-summary.js');
    const ctx = open();
    const d = await domainNamedForCli(ctx, name);
    const to = ctx.now();
    return JSON.stringify(await summaryOf(ctx, d, to - days * 86_400_000, to), null, 2);
  },
  'reports list': async (args, open) => {
    const { values } = opts(args, { outcome: 'string', limit: 'string' });
    const outcome = (values.outcome as string | undefined) ?? null;
    if (outcome !== null && !['applied', 'duplicate', 'ignored', 'unmatched'].includes(outcome))
      throw new UsageError('--outcome is applied, duplicate, ignored or unmatched');
    const limit = Number(values.limit ?? 20);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit is 1 to 1000');
    const { listInboundReports } = await import('./store/inbound-reports.js');
    const { runNow } = await import('./store/op.js');
    const rows = await runNow(listInboundReports(open().db, outcome as 'unmatched' | null, limit));
    return JSON.stringify(
      rows.map(({ raw, parsed_json, ...r }) => ({
        ...r,
        created_at: new Date(r.created_at).toISOString(),
        has_raw: raw !== null,
        parsed: JSON.parse(parsed_json),
      })),
      null,
      2,
    );
  },
  'reports show': async (args, open) => {
    const id = need(opts(args, {}).positionals[0], 'REPORT_ID');
    const { inboundReportById } = await import('./store/inbound-reports.js');
    const { runNow } = await import('./store/op.js');
    const row = await runNow(inboundReportById(open().db, id));
    if (!row) throw new Error('no such report');
    if (!row.raw) throw new Error('this report changed something, so its raw message was not kept');
    const { printable } = await import('./inbound/printable.js');
    process.stdout.write(printable(row.raw)); // control characters escaped: the message is anyone's input
  },
  sites: async (args, open) => {
    opts(args, {});
    const { listSites } = await import('./services/delivery-control.js');
    return JSON.stringify(await listSites(open()), null, 2);
  },
  'site suspend': async (args, open) => {
    const { values, positionals } = opts(args, { seconds: 'string', reason: 'string', ip: 'string' });
    const seconds = values.seconds === undefined ? null : Number(values.seconds);
    const { siteCommand } = await import('./services/delivery-control.js');
    const c = {
      kind: 'suspend' as const,
      site: need(positionals[0], 'SITE'),
      ip: (values.ip as string | undefined) ?? null,
      seconds,
      reason: (values.reason as string | undefined) ?? null,
    };
    return JSON.stringify(await siteCommand(open(), c), null, 2);
  },
  'site resume': async (args, open) => {
    const { values, positionals } = opts(args, { ip: 'string' });
    const { siteCommand } = await import('./services/delivery-control.js');
    const c = {
      kind: 'resume' as const,
      site: need(positionals[0], 'SITE'),
      ip: (values.ip as string | undefined) ?? null,
      seconds: null,
      reason: null,
    };
    return JSON.stringify(await siteCommand(open(), c), null, 2);
  },
  'ip list': async (args, open) => {
    opts(args, {});
    const { listIps } = await import('./services/delivery-control.js');
    return JSON.stringify(await listIps(open()), null, 2);
  },
  'ip warmup': async (args, open) => {
    const { values, positionals } = opts(args, { day: 'string', stop: 'boolean' });
    const ip = need(positionals[0], 'IP');
    const { warmupIp } = await import('./services/delivery-control.js');
    return JSON.stringify(await warmupIp(open(), ip, Number(values.day ?? 0), values.stop === true), null, 2);
  },
  ips: async (args, open) => {
    opts(args, {});
    const { ipHealth } = await import('./services/ip-health.js');
    return JSON.stringify(await ipHealth(open()), null, 2);
  },
  'ips check': async (args, open) => {
    opts(args, {});
    const { checkIps } = await import('./services/ip-health.js');
    return JSON.stringify(await checkIps(open()), null, 2);
  },
  'tls-policy': async (args, open) => {
    const { positionals } = opts(args, {});
    const domain = need(positionals[0], 'DOMAIN');
    const { describeTlsPolicy } = await import('./services/tls-policy.js');
    return JSON.stringify(await describeTlsPolicy(open(), domain), null, 2);
  },
  'tls-policy set': async (args, open) => {
    const { values, positionals } = opts(args, { mode: 'string' });
    const domain = need(positionals[0], 'DOMAIN');
    const { setTlsPolicyOverride, OVERRIDE_MODES } = await import('./services/tls-policy.js');
    const mode = OVERRIDE_MODES.find((m) => m === values.mode);
    if (!mode) throw new UsageError('--mode is enforce, opportunistic or off');
    return JSON.stringify(await setTlsPolicyOverride(open(), domain, mode), null, 2);
  },
  'tls-policy clear': async (args, open) => {
    const domain = need(opts(args, {}).positionals[0], 'DOMAIN');
    const { clearTlsPolicyOverride } = await import('./services/tls-policy.js');
    return JSON.stringify(await clearTlsPolicyOverride(open(), domain), null, 2);
  },
  'tls-report': async (args, open) => {
    const { values } = opts(args, { domain: 'string', date: 'string' });
    const domain = need(values.domain, '--domain');
    const date = need(values.date, '--date');
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new UsageError('--date is YYYY-MM-DD');
    const { tlsReport } = await import('./services/tls-reports.js');
    const report = await tlsReport(open(), domain, date);
    if (!report) throw new Error(`no TLS report for ${domain} on ${date}: nothing was sent to it that day`);
    return JSON.stringify(report, null, 2);
  },
  'queue summary': queueCommand('summary'),
  'queue list': queueCommand('list'),
  'queue hold': queueCommand('hold'),
  'queue release': queueCommand('release'),
  'queue retry': queueCommand('retry'),
  'queue purge': queueCommand('purge'),
  backup: async (args, open) => {
    const file = need(opts(args, {}).positionals[0], 'FILE');
    const { backupStore } = await import('./store/backup.js');
    return JSON.stringify(await backupStore(open().db, file));
  },
  'migrate-to-postgres': async (args, _open, settings) => {
    const { values } = opts(args, { to: 'string', batch: 'string' });
    const config = settings();
    const url = need(values.to ?? config.databaseUrl, '--to postgres://… (or MTA_DATABASE_URL)');
    if (!/^postgres(ql)?:\/\//.test(url)) throw new UsageError('--to is a postgres://… URL');
    const batch = Number(values.batch ?? 1000);
    if (!Number.isInteger(batch) || batch < 1 || batch > 100000) throw new UsageError('--batch is 1 to 100000');
    const { migrateToPostgres } = await import('./services/migrate-store.js');
    const r = migrateToPostgres({
      dataDir: config.dataDir,
      databaseUrl: url,
      batch,
      onTable: (t) => process.stdout.write(`${t.table} ${t.rows}\n`),
    });
    const rate = Math.round(r.total / Math.max(r.ms / 1000, 0.001));
    return `total ${r.total} (${(r.ms / 1000).toFixed(1)} s, ${rate} rows/s)`;
  },
  'parse-report': async (args) => {
    const file = need(opts(args, {}).positionals[0], 'FILE.eml');
    const { readFile } = await import('node:fs/promises');
    const { createParsePool } = await import('./inbound/parse-pool.js');
    const { TEXT_CAP } = await import('./inbound/parse.js');
    const pool = createParsePool({ size: 1 }); // the listener's worker and time budget
    try {
      const report = await pool.parse((await readFile(file)).subarray(0, TEXT_CAP));
      if (report.error)
        throw new Error(
          `${file}: the report could not be read (${report.error === 'timeout' ? 'over the time budget' : 'parser failed'})`,
        );
      return JSON.stringify(report, null, 2);
    } finally {
      await pool.close();
    }
  },
};

const USAGE = `usage: mta [--config FILE] <command>
  serve
  team create NAME
  key create --team NAME [--mode test|live] [--scopes a,b] [--name LABEL]
  key list --team NAME
  key revoke KEY_ID
  credits add --team NAME --amount N [--usd PRICE]
  domain add --team NAME DOMAIN
  domain verify DOMAIN
  dmarc --domain NAME [--days N]   (DMARC aggregate reports of the last N days, default 7)
  reports list [--outcome applied|duplicate|ignored|unmatched] [--limit N]
  reports show REPORT_ID
  parse-report FILE.eml
  migrate-to-postgres [--to postgres://…] [--batch N]   (copies MTA_DATA_DIR's SQLite store)
  backup FILE   (a consistent copy of the SQLite store, mode 0600, while the service runs; never overwrites)
  sites
  site suspend SITE [--seconds N] [--reason TEXT] [--ip IP]
  site resume SITE [--ip IP]
  ip list
  ip warmup IP [--day N] [--stop]
  ips                                     (the last sending-IP health check)
  ips check                               (checks reverse DNS, blocklists and SPF of each sending IP now)
  tls-policy DOMAIN                       (its cached MTA-STS policy, DANE, the operator's override)
  tls-policy set DOMAIN --mode enforce|opportunistic|off
  tls-policy clear DOMAIN
  tls-report --domain DOMAIN --date YYYY-MM-DD (the RFC 8460 JSON report of that UTC day)
  queue summary [--by site|domain|team|state] [FILTERS]
  queue list [FILTERS] [--limit N]
  queue hold|release|retry [FILTERS]      (hold with no filter needs --all)
  queue purge [FILTERS] [--reason TEXT]   (no filter needs --all)
  FILTERS: --team NAME --site SITE --domain DOMAIN --sender-domain DOMAIN --tag TAG --email em_…
           --state scheduled|due|deferred|held|in_flight --older-than SECONDS`;

/** `--config FILE` (or `--config=FILE`) anywhere on the line: every command reads its settings from that file. */
function takeConfig(argv: string[]): { argv: string[]; file: string | undefined } {
  const out: string[] = [];
  let file: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (flag !== '--config') {
      out.push(argv[i]);
      continue;
    }
    file = inline ?? argv[++i];
    if (!file || file.startsWith('--')) throw new UsageError('--config needs a FILE');
  }
  return { argv: out, file };
}

export async function run(line: string[]): Promise<number> {
  const { argv, file } = takeConfig(line);
  const [a, b, ...rest] = argv;
  if (a === 'serve' || a === undefined) {
    opts(argv.slice(a ? 1 : 0), {});
    const { main } = await import('./main.js');
    await main(file);
    return -1; // keeps running
  }
  const name = COMMANDS[`${a} ${b}`] ? `${a} ${b}` : a;
  const handler = COMMANDS[name];
  if (a === 'help' || a === '--help' || a === '-h') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (!handler) {
    process.stderr.write(`mta: unknown command ${JSON.stringify(argv.join(' '))}\n${USAGE}\n`);
    return 2;
  }
  const args = name === a ? argv.slice(1) : rest;
  let ctx: Ctx | undefined;
  let config: Config | undefined;
  const settings = () => (config ??= loadConfig({ file }));
  const open = () => {
    if (ctx) return ctx;
    const c = settings();
    const log = createLogger(process.env.MTA_LOG_LEVEL ?? 'warn');
    const db = openDb(c.dataDir, { synchronous: c.sqliteSynchronous, databaseUrl: c.databaseUrl, create: false });
    return (ctx = { db, config: c, now: Date.now, log });
  };
  try {
    const out = await handler(args, open, settings);
    if (typeof out === 'string') process.stdout.write(out + '\n');
    return 0;
  } finally {
    ctx?.db.close();
  }
}

function fail(err: unknown): number {
  if (err instanceof Refused) {
    process.stderr.write(`mta: ${err.message}\n`);
    return 2;
  }
  if (err instanceof UsageError || (err as NodeJS.ErrnoException)?.code?.startsWith?.('ERR_PARSE_ARGS')) {
    process.stderr.write(`mta: ${(err as Error).message}\n${USAGE}\n`);
    return 2; // a usage error: nothing was opened or created
  }
  if (err instanceof ApiError) process.stderr.write(`mta: ${err.message} (${err.code})\n`);
  else if (err instanceof NoStoreError) process.stderr.write(`mta: ${err.message} (set MTA_DATA_DIR or --config)\n`);
  else if (err instanceof ConfigError) process.stderr.write(`mta: ${err.message}\n`);
  else process.stderr.write(`mta: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
}

if (process.argv[1] && /(?:^|[\\/])(mta(\.js)?|cli\.ts)$/.test(process.argv[1])) {
  run(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exitCode = code;
    },
    (err) => {
      // Exit now: a start refused half-way (a listener that cannot bind) may leave timers that would keep it up.
      process.exit(fail(err));
    },
  );
}
