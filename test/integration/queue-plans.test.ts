// The queue-control statements (list, summary, action batches, with every filter) checked with EXPLAIN QUERY
// PLAN: the waiting recipients are reached through the partial indexes of migration 012 (or by team, email or
// domain lookups), never by scanning deliveries, emails or events, which keep every delivered message. Summaries
// read the counters of migration 014, the current minute's due recipients by deliveries_due, the expired leases by
// deliveries_leased, plus one oldest-email seek per group.
import { expect } from 'chai';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';
import { preparedTexts } from '../../src/store/db.js';
import { parseFilter, queueList, queueSummary, queueAction, FILTER_NAMES } from '../../src/services/queue.js';
import { feature as operations } from '../../src/features/operations.js';
import { planOf } from '../helpers/plans.js';

const GROWING = ['emails', 'deliveries', 'events', 'email_tags', 'credit_ledger', 'webhook_deliveries'];

function tableOf(text: string, name: string): string {
  for (const m of text.matchAll(/(?:FROM|JOIN)\s+(\w+)(?:\s+AS)?\s+(\w+)/gi)) if (m[2] === name) return m[1];
  return name;
}

describe('query plans of queue control', function () {
  before(function () {
    if (testEngine() === 'pg') this.skip(); // EXPLAIN QUERY PLAN is SQLite's (PostgreSQL plans: docs/postgres.md)
  });
  this.timeout(30_000);
  let s: TestService;
  before(async () => {
    s = await startTestService({ features: [operations] });
  });
  after(() => s?.close());

  it('never scans a growing table (the waiting set is read through its partial indexes)', async () => {
    const team = s.team('plans');
    const key = s.key(team.id, 'test', ['emails:send']);
    await s.api('POST', '/v1/emails', {
      key,
      body: {
        from: 'a@x.test',
        to: ['a@one.test'],
        subject: 's',
        text: 't',
        tags: ['t'],
        scheduled_at: new Date(Date.now() + 3600e3).toISOString(),
      },
    });
    const values: Record<string, string> = {
      team: 'plans',
      site: 'nowhere',
      domain: 'one.test',
      sender_domain: 'x.test',
      tag: 't',
      email: 'em_x',
      state: 'held',
      older_than: '0',
    };
    const combos: Record<string, string>[] = [
      {},
      ...FILTER_NAMES.map((k) => ({ [k]: values[k] })),
      { domain: 'one.test', state: 'deferred' },
    ];
    for (const c of combos) {
      const f = await parseFilter(s.ctx, c);
      await queueList(s.ctx, f, 10);
      for (const by of ['site', 'domain', 'team', 'state'] as const) await queueSummary(s.ctx, by, f);
      for (const a of ['hold', 'release', 'retry'] as const) await queueAction(s.ctx, a, f, { all: true });
    }
    await queueAction(s.ctx, 'purge', await parseFilter(s.ctx, { site: 'nowhere' }));
    await queueAction(s.ctx, 'purge', await parseFilter(s.ctx, { domain: 'one.test' }));
    const texts = preparedTexts(s.db).filter((t) => /held_at|deliveries d JOIN emails e/.test(t));
    expect(texts.length).to.be.greaterThan(15);
    for (const text of texts) {
      const details = planOf(s.db, text);
      for (const detail of details) {
        const m = /^SCAN (\w+)/.exec(detail);
        if (!m || !GROWING.includes(tableOf(text, m[1]))) continue;
        expect(detail, `${text}\n${details.join('\n')}`).to.match(/USING (COVERING )?INDEX deliveries_waiting/);
      }
    }
  });

  it('every summary the counters answer reads them and index seeks, never scanning a growing table', async () => {
    // A waiting recipient again (the test above purged its own), so that every group looks up its oldest email.
    const teamId = s.db.prepare("SELECT id FROM teams WHERE name = 'plans'").pluck().get() as string;
    const r = await s.api('POST', '/v1/emails', {
      key: s.key(teamId, 'test', ['emails:send']),
      body: { from: 'a@x.test', to: ['b@one.test'], subject: 's', text: 't' },
    });
    expect(r.status).to.equal(202);
    // A second one in flight (leased, as a claim leaves it) and a third held, so those groups look up their oldest.
    const r2 = await s.api('POST', '/v1/emails', {
      key: s.key(teamId, 'test', ['emails:send']),
      body: { from: 'a@x.test', to: ['c@one.test'], subject: 's', text: 't' },
    });
    const r3 = await s.api('POST', '/v1/emails', {
      key: s.key(teamId, 'test', ['emails:send']),
      body: { from: 'a@x.test', to: ['d@one.test'], subject: 's', text: 't' },
    });
    s.db
      .prepare(
        'UPDATE deliveries SET held_at = 1, next_attempt_at = NULL WHERE email_seq = (SELECT seq FROM emails WHERE id = ?)',
      )
      .run(r3.body.id);
    const until = Date.now() + 3600e3;
    s.db
      .prepare(
        'UPDATE deliveries SET leased_until = ?, next_attempt_at = ? WHERE email_seq = (SELECT seq FROM emails WHERE id = ?)',
      )
      .run(until, until, r2.body.id);
    const inputs = [
      {},
      { team: 'plans' },
      { domain: 'one.test' },
      { site: 'nowhere' },
      { sender_domain: 'x.test' },
      ...['scheduled', 'due', 'deferred', 'held', 'in_flight'].map((state) => ({ state })),
      { team: 'plans', domain: 'one.test', state: 'due' },
    ];
    for (const input of inputs)
      for (const by of ['site', 'domain', 'team', 'state'] as const)
        await queueSummary(s.ctx, by, await parseFilter(s.ctx, input));
    const texts = preparedTexts(s.db).filter((t) =>
      /queue_counts|queue_slots|d\.next_attempt_at >=? @lo|d\.leased_until > 0 AND d\.held_at|e\.seq = \(SELECT min|ORDER BY d\.email_seq LIMIT 1|deliveries l CROSS|deliveries h CROSS/.test(
        t,
      ),
    );
    const plans = texts.map((text) => ({ text, plan: planOf(s.db, text).join('\n') }));
    /** The plans of the texts matching `re` (at least one). */
    const of = (re: RegExp) => {
      const found = plans.filter((p) => re.test(p.text)).map((p) => p.plan);
      expect(found, String(re)).not.to.have.length(0);
      return found;
    };
    for (const plan of of(/FROM queue_counts/)) expect(plan).to.match(/^(SCAN|SEARCH) queue_counts/);
    for (const plan of of(/FROM queue_slots/))
      expect(plan).to.match(/SEARCH queue_slots USING PRIMARY KEY \(slot<\?\)/);
    for (const plan of of(/d\.next_attempt_at >=? @lo/))
      expect(plan).to.match(/SEARCH d USING INDEX deliveries_due \(next_attempt_at>\? AND next_attempt_at<\?\)/);
    for (const plan of of(/FROM deliveries l CROSS JOIN/))
      expect(plan).to.match(/^SEARCH l USING COVERING INDEX deliveries_leased \(leased_until>\?\)/);
    for (const plan of of(/FROM deliveries h CROSS JOIN/))
      expect(plan).to.match(/^SEARCH h USING INDEX deliveries_held|^SCAN h USING INDEX deliveries_held/);
    for (const plan of of(/d\.leased_until > 0 AND d\.held_at/))
      expect(plan).to.match(/^(SCAN|SEARCH) d USING INDEX deliveries_leased/);
    expect(plans.filter((p) => /LIMIT 1/.test(p.text)).length).to.be.greaterThan(8);
    for (const { text, plan } of plans) {
      for (const detail of plan.split('\n')) {
        const m = /^SCAN (\w+)/.exec(detail);
        if (!m || !GROWING.includes(tableOf(text, m[1]))) continue;
        expect(detail, `${text}\n${plan}`).to.match(/USING (COVERING )?INDEX deliveries_(waiting|held|leased)/);
      }
      if (/FROM deliveries d WHERE d\.domain = @key/.test(text))
        expect(plan).to.match(/deliveries_waiting_domain \(domain=\?\)/);
      if (/e\.team_id = @key/.test(text)) expect(plan).to.match(/emails_team_status \(team_id=\? AND status=\?\)/);
      if (/d\.domain = @domain/.test(text) && !/deliveries [lh] /.test(text))
        expect(plan, text).to.match(/deliveries_waiting_domain \(domain=\?/);
    }
  });
});
