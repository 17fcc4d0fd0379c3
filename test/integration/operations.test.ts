// /metrics (Prometheus text from the running service) and the retention pass over real tables.
import { expect } from 'chai';
import { startTestService, testClock, testEngine, type TestService } from '../helpers/service.js';
import { count } from '../helpers/factories.js';
import { runRetention } from '../../src/services/retention.js';
import { feature as operations } from '../../src/features/operations.js';
import { runSync, transaction } from '../../src/store/op.js';
import { bumpSiteStat, bumpStat, noteDomainSite } from '../../src/store/stats.js';

describe('operations: metrics and retention', () => {
  let s: TestService;
  const clock = testClock();
  before(async () => {
    s = await startTestService({ features: [operations], now: clock.now, env: { MTA_RATE_LIMIT: '0' } });
  });
  after(() => s.close());

  it('serves Prometheus metrics: events by type, queue depth, HTTP durations by route', async () => {
    const key = s.key(s.team().id);
    for (let i = 0; i < 3; i++)
      expect(
        (
          await s.api('POST', '/v1/emails', {
            key,
            body: { from: 'a@x.test', to: ['b@y.test', 'c@y.test'], subject: 's', text: 't' },
          })
        ).status,
      ).to.equal(202);
    const res = await fetch(`${s.url}/metrics`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/text\/plain/);
    const text = await res.text();
    expect(text).to.match(/^mta_events_total\{type="queued"\} 3$/m);
    expect(text).to.match(/^mta_deliveries_pending 6$/m);
    expect(text).to.match(/^mta_deliveries_due 6$/m);
    expect(text).to.match(/^mta_deliveries_due_lag_seconds 0(\.\d+)?$/m);
    expect(Number(/^mta_data_dir_free_bytes (\d+)$/m.exec(text)?.[1])).to.be.greaterThan(0);
    clock.advance(90_000); // no delivery loop here: the six stay due, 90 s late
    const later = await (await fetch(`${s.url}/metrics`)).text();
    expect(Number(/^mta_deliveries_due_lag_seconds ([\d.]+)$/m.exec(later)?.[1])).to.be.within(90, 95);
    expect(text).to.match(
      /mta_http_request_duration_seconds_count\{method="POST",route="\/v1\/emails",status="202"\} 3/,
    );
    expect(text).to.contain('process_cpu_user_seconds_total');
    expect(text).not.to.contain(key);
    // On PostgreSQL, the engine's own work: statements, round trips, time waited (absent on SQLite).
    const statements = Number(/^mta_db_statements_total (\d+)$/m.exec(text)?.[1] ?? -1);
    if (testEngine() === 'pg') {
      expect(statements).to.be.greaterThan(3 * 3);
      expect(text).to.match(/^mta_db_round_trips_total \d+$/m);
      expect(text).to.match(/^mta_db_wait_seconds_total [0-9.e-]+$/m);
      // The pool's use by kind: the three accepts ran as turns on it (MTA_PG_POOLED_TURNS on by default).
      const turn = (name: string) =>
        Number(new RegExp(`^mta_db_pool_${name}_total\\{kind="turn"\\} ([0-9.e-]+)$`, 'm').exec(text)?.[1]);
      expect(turn('acquires')).to.be.within(1, 3);
      expect(turn('statements')).to.be.greaterThan(3 * 3);
      expect(turn('hold_seconds')).to.be.at.least(turn('answer_seconds'));
      expect(turn('answer_seconds')).to.be.at.least(turn('commit_seconds'));
      expect(turn('commit_seconds')).to.be.greaterThan(0);
      expect(text).to.match(/^mta_db_pool_busy_seconds_total [0-9.e-]+$/m);
    } else {
      expect(statements).to.equal(-1);
      expect(text).not.to.contain('mta_db_pool_');
    }
  });

  it('drops idempotency records after 24 hours and inbound reports after 30 days, nothing younger', async () => {
    const key = s.key(s.team().id);
    await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@x.test', to: 'b@y.test', subject: 's', text: 't' },
      headers: { 'idempotency-key': 'k1' },
    });
    const insert = s.db.prepare(
      "INSERT INTO inbound_reports (id, kind, outcome, rcpt_to, parsed_json, raw_size, created_at) VALUES (?, 'other', 'unmatched', 'fbl@x', '{}', 0, ?)",
    );
    insert.run('rep_old', clock.now() - 31 * 86400e3);
    insert.run('rep_new', clock.now() - 29 * 86400e3);
    expect(await runRetention(s.ctx)).to.include({ idempotency: 0, inbound_reports: 1 });
    expect(count(s.db, 'inbound_reports')).to.equal(1);
    clock.advance(24 * 3600e3 + 1000);
    expect((await runRetention(s.ctx)).idempotency).to.equal(1);
    expect(count(s.db, 'idempotency')).to.equal(0);
  });

  it('drops hourly statistics older than MTA_STATS_RETENTION_DAYS and domain sites unseen for 90 days, nothing younger', async () => {
    const team = s.team().id;
    const HOUR = 3600e3;
    const DAY = 24 * HOUR;
    const hourOf = (t: number) => Math.floor(t / HOUR) * HOUR;
    const now = clock.now();
    // Three days of counters 400 days back (more than one pass's first day), and some just inside the window.
    const old = [401, 400.5, 399.9].map((d) => hourOf(now - d * DAY));
    runSync(
      transaction(s.db, function* () {
        for (const mode of [0, 1])
          for (const h of [...old, hourOf(now - 399 * DAY), hourOf(now)]) {
            yield* bumpStat(s.db, team, mode, h, 'sent', 2);
            yield* bumpSiteStat(s.db, { teamId: team, testMode: mode, hour: h, site: 'gmail.com' }, 'sent', 1);
          }
        yield* noteDomainSite(s.db, 'stale.test', 'other', now - 91 * DAY);
        yield* noteDomainSite(s.db, 'fresh.test', 'other', now - 89 * DAY);
      }),
    );
    const rows = (table: string) =>
      (s.db.prepare(`SELECT hour FROM ${table} WHERE team_id = ? ORDER BY hour`).all(team) as { hour: number }[]).map(
        (r) => Number(r.hour),
      );
    expect(rows('stats_hourly')).to.have.length(10);
    const pass = await runRetention(s.ctx);
    // 400 days (the default) before now, at the start of that hour: the two older hours of each mode and table go.
    const cut = hourOf(now - 400 * DAY);
    for (const table of ['stats_hourly', 'site_stats_hourly']) {
      expect(
        rows(table).every((h) => h >= cut),
        table,
      ).to.equal(true);
      expect(rows(table), table).to.have.length(6);
    }
    expect(pass).to.include({ stats: 2 * 2 * 2, domain_sites: 1 });
    const domains = s.db.prepare('SELECT domain FROM domain_sites ORDER BY domain').pluck().all();
    expect(domains).to.deep.equal(['fresh.test']);
    expect(await runRetention(s.ctx)).to.include({ stats: 0, domain_sites: 0 });
  });
});
