// The queue-control statements (list, summary, action batches, with every filter) checked with EXPLAIN QUERY
// PLAN: the waiting recipients are reached through the partial indexes of migration 012 (or by team, email or
// domain lookups), never by scanning deliveries, emails or events, which keep every delivered message. The
// unfiltered summary reads the counters of migration 013 plus one index seek per group.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
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
  this.timeout(30_000);
  let s: TestService;
  before(async () => {
    s = await startTestService({ features: [operations] });
  });
  after(() => s.close());

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
      const f = parseFilter(s.ctx, c);
      queueList(s.ctx, f, 10);
      for (const by of ['site', 'domain', 'team', 'state'] as const) queueSummary(s.ctx, by, f);
      for (const a of ['hold', 'release', 'retry'] as const) await queueAction(s.ctx, a, f, { all: true });
    }
    await queueAction(s.ctx, 'purge', parseFilter(s.ctx, { site: 'nowhere' }));
    await queueAction(s.ctx, 'purge', parseFilter(s.ctx, { domain: 'one.test' }));
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

  it('the unfiltered summary reads the counters and seeks the oldest email, never scanning a growing table', () => {
    for (const by of ['site', 'domain', 'team'] as const) queueSummary(s.ctx, by, {});
    const texts = preparedTexts(s.db).filter((t) => /queue_counts|e\.seq = \(SELECT min/.test(t));
    expect(texts.filter((t) => /FROM queue_counts/.test(t))).to.have.length(2);
    expect(texts.filter((t) => /e\.seq = \(SELECT min/.test(t))).to.have.length(2);
    for (const text of texts) {
      const rows = s.db.prepare(`EXPLAIN QUERY PLAN ${text}`).all({ key: 'x' }) as { detail: string }[];
      const plan = rows.map((r) => r.detail).join('\n');
      for (const { detail } of rows)
        expect(detail, `${text}\n${plan}`).not.to.match(/^SCAN (?!queue_counts|CONSTANT ROW)/);
      if (/FROM deliveries d WHERE d\.domain/.test(text))
        expect(plan).to.match(/deliveries_waiting_domain \(domain=\?\)/);
      if (/e\.team_id = @key/.test(text)) expect(plan).to.match(/emails_team_status \(team_id=\? AND status=\?\)/);
    }
  });
});
