// The scheduled re-check as a component: runs on its cron expression, never overlaps a slow run
// (a stalled DNS name), and stops scheduling when the service closes.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { feature as domains } from '../../src/features/domains.js';
import type { DomainCheckJob } from '../../src/jobs/domain-checks.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('domain re-check job', function () {
  this.timeout(30_000);
  let dns: TestDns;
  let s: TestService;
  before(async () => {
    dns = await new TestDns().start();
    s = await startTestService({
      features: [domains],
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_SENDING_IPS: '192.0.2.10',
        MTA_DNS_CHECK_CRON: '*/1 * * * * *',
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.8',
      },
    });
  });
  after(() => dns.stop());

  it('re-checks every second without overlapping a slow run, and stops with the service', async () => {
    const job = s.svc.components.find((c) => c.name === 'domain-checks') as DomainCheckJob;
    const team = s.team();
    const key = s.key(team.id, 'live', ['domains:read', 'domains:write']);
    const d = (await s.api('POST', '/v1/domains', { key, body: { name: 'slow.test' } })).body;
    dns.set(d.records[0].name, { stall: true }); // each check now waits for the DKIM time-out (> 1 s)
    await sleep(3500);
    expect(job.runs).to.be.at.least(1);
    expect(job.maxActive).to.equal(1);
    const got = (await s.api('GET', `/v1/domains/${d.id}`, { key })).body;
    expect(got.last_checked_at).to.be.a('string');
    expect(got.records[0].error).to.match(/timed out/);
    await s.close();
    const seen = dns.queries.length;
    await sleep(1500);
    expect(dns.queries.length).to.equal(seen);
  });
});
