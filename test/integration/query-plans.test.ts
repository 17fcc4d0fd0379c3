// Every SQL statement the running service prepared while serving the main paths (submit, deliver,
// list with filters and cursors, events, webhooks, domains) is checked with EXPLAIN QUERY PLAN:
// no full scan of a table that grows with traffic.
import { expect } from 'chai';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';
import { preparedTexts } from '../../src/store/db.js';
import { plan } from '../helpers/plans.js';
import { runRetention } from '../../src/services/retention.js';
import { purgeContentBefore } from '../../src/store/retention.js';
import { runSync } from '../../src/store/op.js';

const GROWING = [
  'emails',
  'deliveries',
  'events',
  'email_tags',
  'suppressions',
  'idempotency',
  'credit_ledger',
  'webhook_deliveries',
  'webhook_attempts',
  'inbound_reports',
  'email_messages',
  'email_attachments',
  'site_stats_hourly',
  'domain_sites',
  'dmarc_reports',
  'dmarc_records',
];

/** The table a name in a plan stands for: itself, or the table it aliases in the statement. */
function tableOf(text: string, name: string): string {
  for (const m of text.matchAll(/(?:FROM|JOIN)\s+(\w+)(?:\s+AS)?\s+(\w+)/gi)) if (m[2] === name) return m[1];
  return name;
}

describe('query plans of hot statements', function () {
  before(function () {
    if (testEngine() === 'pg') this.skip(); // EXPLAIN QUERY PLAN is SQLite's (PostgreSQL plans: docs/postgres.md)
  });
  this.timeout(30_000);
  let s: TestService;
  before(async () => {
    s = await startTestService({ env: { MTA_RATE_LIMIT: '0' } });
  });
  after(() => s?.close());

  it('use an index for every table that grows', async () => {
    const t = s.team();
    const key = s.key(t.id, 'test', [
      'emails:send',
      'emails:read',
      'domains:read',
      'domains:write',
      'webhooks:write',
      'keys:write',
    ]);
    await s.api('POST', '/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/hook', events: ['delivered'] } });
    for (let i = 0; i < 5; i++) {
      await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'a@x.test', to: ['delivered@y.test', 'bounced@y.test'], subject: 's', text: 't', tags: ['a'] },
        headers: { 'idempotency-key': `k${i}` },
      });
    }
    const deadline = Date.now() + 10_000;
    while (
      Date.now() < deadline &&
      (s.db.prepare("SELECT count(*) FROM emails WHERE status = 'queued' OR status = 'sent'").pluck().get() as number) >
        0
    )
      await new Promise((r) => setTimeout(r, 100));
    const l = await s.api('GET', '/v1/emails?limit=2&status=bounced', { key });
    expect(l.body.data).to.have.length(2);
    await s.api('GET', '/v1/emails?tag=a&test_mode=true', { key });
    await s.api('GET', `/v1/emails?cursor=${l.body.next_cursor}`, { key });
    await s.api('GET', `/v1/emails/${l.body.data[0].id}/events`, { key });
    for (const p of [
      '/v1/stats/sites',
      '/v1/suppressions',
      '/v1/credits',
      '/v1/domains',
      '/v1/webhooks',
      '/v1/api-keys',
    ])
      await s.api('GET', p, { key });
    // A domain's DMARC summary and reports list (the summary's GROUP BY must start from the domain's reports).
    const dom = 'dom_plans0000000000000000000000';
    s.db
      .prepare("INSERT INTO domains (id, team_id, name, status, created_at) VALUES (?, ?, 'plans.test', 'verified', 0)")
      .run(dom, t.id);
    expect((await s.api('GET', `/v1/domains/${dom}/dmarc`, { key })).status).to.equal(200);
    expect((await s.api('GET', `/v1/domains/${dom}/dmarc/reports`, { key })).status).to.equal(200);
    // The retention pass, its content purge with something to delete (every test email is final by now).
    await runRetention(s.ctx);
    expect(runSync(purgeContentBefore(s.db, true, Date.now() + 1000, Date.now()))).to.equal(5);
    const texts = preparedTexts(s.db).filter((x) => /^\s*(SELECT|UPDATE|DELETE|INSERT|WITH)/i.test(x));
    expect(texts.length).to.be.greaterThan(20);
    const bad: string[] = [];
    for (const text of texts) {
      const scans = plan(s, text).filter((d) => {
        const m = /^SCAN (\w+)(.*)$/.exec(d);
        return m !== null && !/USING (COVERING )?INDEX/.test(m[2]) && GROWING.includes(tableOf(text, m[1]));
      });
      if (scans.length) bad.push(`${scans.join('; ')} <= ${text.replace(/\s+/g, ' ').slice(0, 160)}`);
    }
    expect(bad, bad.join('\n')).to.deep.equal([]);
  });
});
