// `npm run bench -- dmarc`: the DMARC summary of a domain (GET /v1/domains/{id}/dmarc) over 10^5 report records in
// 1,000 reports (100 records each, 20 reporting organisations, 2,000 source IPs of which 4 are ours, report periods
// spread over the last 7 days), on SQLite and PostgreSQL (BENCH_ENGINE=sqlite|pg for one of them). Times the
// store's queries (the GROUP BY of the sources, the totals, the days), the service's summary (reverse DNS cached)
// and the HTTP answer of a running `mta serve` on that store. Reverse DNS goes to a loopback DNS server (NXDOMAIN).
import { openDb, tx, type DB } from '../src/store/db.js';
import { insertDmarcReport, dmarcDays, dmarcReportTotals, dmarcSources } from '../src/store/dmarc.js';
import { runSync } from '../src/store/op.js';
import { summaryOf } from '../src/services/dmarc-summary.js';
import { domainById } from '../src/store/domains.js';
import { loadConfig } from '../src/config/load.js';
import { TestDns } from '../test/helpers/dns.js';
import { startChild, mta, pgDatabaseUrl, pct, fmt } from './bench-lib.js';
import pino from 'pino';

const REPORTS = 1000;
const PER_REPORT = 100;
const IPS = 2000;
const OURS = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4'];
const DAY = 86_400_000;

function fill(db: DB, teamId: string, domainId: string, now: number): void {
  for (let i = 0; i < REPORTS; i += 100)
    tx(db, () => {
      for (let r = i; r < i + 100; r++) {
        const begin = Math.floor((now - 7 * DAY) / DAY) * DAY + DAY + (r % 6) * DAY;
        const records = Array.from({ length: PER_REPORT }, (_, k) => {
          const n = (r * PER_REPORT + k) * 7919;
          const ip = k < 4 ? OURS[k] : `198.51.${(n % IPS) >> 8}.${(n % IPS) & 255}`;
          const pass = k < 4 || n % 3 !== 0 ? 1 : 0;
          return {
            source_ip: ip,
            count: k < 4 ? 500 : 1 + (n % 5),
            disposition: pass ? 'none' : n % 2 ? 'quarantine' : 'reject',
            dkim_aligned: pass,
            spf_aligned: pass && n % 5 ? 1 : 0,
            dmarc_pass: pass,
            header_from: 'bench.test',
            envelope_from: null,
            auth_json: '{}',
          };
        });
        const report = {
          id: `dmr_bench${String(r).padStart(21, '0')}`,
          team_id: teamId,
          domain_id: domainId,
          domain: 'bench.test',
          org_name: `reporter${r % 20}.example`,
          email: null,
          report_id: `r${r}`,
          begin_at: begin,
          end_at: begin + DAY - 1000,
          records: PER_REPORT,
          messages: records.reduce((a, x) => a + x.count, 0),
          schema: 'rfc7489',
          generator: null,
          policy_json: '{}',
          errors_json: null,
          remote_ip: '127.0.0.1',
          received_at: now,
          authenticated: 1,
          authenticated_by: 'dkim:example.org',
        };
        runSync(insertDmarcReport(db, report, records));
      }
    });
}

async function timed(n: number, fn: () => unknown): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}
const line = (label: string, ms: number[]) =>
  console.log(`  ${label}: median ${fmt(pct(ms, 50))} ms, p95 ${fmt(pct(ms, 95))} ms, best ${fmt(ms[0])} ms`);

async function run(engine: 'sqlite' | 'pg', dns: TestDns): Promise<void> {
  const databaseUrl = engine === 'pg' ? await pgDatabaseUrl() : undefined;
  const child = await startChild({
    ...(databaseUrl ? { MTA_DATABASE_URL: databaseUrl } : {}),
    MTA_DNS_SERVERS: dns.server,
    MTA_SENDING_IPS: OURS.join(','),
  });
  try {
    mta(child, 'team', 'create', 'bench');
    const key = mta(child, 'key', 'create', '--team', 'bench', '--mode', 'live', '--scopes', 'domains:read');
    const db = openDb(child.dataDir, { databaseUrl });
    const teamId = db.prepare("SELECT id FROM teams WHERE name = 'bench'").pluck().get() as string;
    const domainId = 'dom_bench00000000000000000000';
    const now = Date.now();
    db.prepare(
      "INSERT INTO domains (id, team_id, name, status, created_at) VALUES (?, ?, 'bench.test', 'verified', ?)",
    ).run(domainId, teamId, now);
    const t0 = performance.now();
    fill(db, teamId, domainId, now);
    console.log(
      `dmarc, ${engine}: ${REPORTS * PER_REPORT} records in ${REPORTS} reports written in ${fmt(performance.now() - t0, 0)} ms`,
    );
    db.exec(engine === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE dmarc_records'); // as autovacuum would after the inserts
    const from = now - 7 * DAY;
    const groups = runSync(dmarcSources(db, domainId, from, now)).length;
    line(
      `store: sources GROUP BY (${groups} source/reporter rows)`,
      await timed(10, () => runSync(dmarcSources(db, domainId, from, now))),
    );
    line('store: report totals', await timed(10, () => runSync(dmarcReportTotals(db, domainId, from, now))));
    line('store: pass rate by day', await timed(10, () => runSync(dmarcDays(db, domainId, from, now))));
    const config = loadConfig({
      env: { MTA_DATA_DIR: child.dataDir, MTA_DNS_SERVERS: dns.server, MTA_SENDING_IPS: OURS.join(',') },
    });
    const ctx = { db, config, now: Date.now, log: pino({ level: 'silent' }) };
    const d = runSync(domainById(db, domainId))!;
    const first = await timed(1, () => summaryOf(ctx, d, from, now));
    for (let i = 0; i < IPS / 100 + 1; i++) await summaryOf(ctx, d, from, now); // every name looked up once
    line(
      `service: summary, first call (100 PTR lookups) ${fmt(first[0])} ms; cached`,
      await timed(10, () => summaryOf(ctx, d, from, now)),
    );
    const get = async () => {
      const res = await fetch(`${child.http}/v1/domains/${domainId}/dmarc`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const body = (await res.json()) as { sources: unknown[]; messages: number };
      if (res.status !== 200) throw new Error(JSON.stringify(body));
      return body;
    };
    const firstHttp = await timed(1, get);
    for (let i = 0; i < IPS / 100 + 1; i++) await get();
    const body = await get();
    line(
      `HTTP GET /v1/domains/{id}/dmarc (${body.sources.length} sources, ${body.messages} messages; first ${fmt(firstHttp[0])} ms)`,
      await timed(20, get),
    );
    db.close();
  } finally {
    await child.stop();
  }
}

export async function benchDmarc(): Promise<void> {
  const dns = await new TestDns().start();
  try {
    const engines = process.env.BENCH_ENGINE
      ? [process.env.BENCH_ENGINE as 'sqlite' | 'pg']
      : (['sqlite', 'pg'] as const);
    for (const e of engines) await run(e, dns);
  } finally {
    await dns.stop();
    if (!process.env.BENCH_ENGINE || process.env.BENCH_ENGINE === 'pg')
      await (await import('../test/helpers/pg.js')).stopSharedPg();
  }
}
