// The DMARC part of a domain's page in a real browser (Debian's Chromium via playwright-core): reports of two weeks
// sent to the inbound listener, the pass-rate chart named and readable, the sources table with failing foreign
// sources first, axe-core clean (no serious/critical), screenshot docs/screenshots/domain-dmarc.png.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { aggregateReport, reporterKey, signedBy } from '../helpers/dmarc-report.js';
import { smtpPort, smtpSend } from '../integration/inbound-fixtures.js';
import { feature as inbound } from '../../src/features/inbound.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { newId } from '../../src/core/ids.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

const DAY = 86_400_000;

describe('DMARC reports on the domain page in a browser', function () {
  this.timeout(60_000);
  let s: TestService;
  let dns: TestDns;
  let browser: Browser;
  let page: Page;
  let key: string;
  let domainId: string;

  before(async () => {
    dns = await new TestDns().start();
    dns.set(TestDns.reverseName('192.0.2.10'), { PTR: ['out1.mta.test'] });
    dns.set(TestDns.reverseName('203.0.113.5'), { PTR: ['mail.lookalike-shop.example'] });
    dns.set(TestDns.reverseName('198.51.100.7'), { PTR: ['relay.newsletter-tool.example'] });
    s = await startTestService({
      features: [inbound, dashboard],
      env: { MTA_DNS_SERVERS: dns.server, MTA_SENDING_IPS: '192.0.2.10' },
    });
    const team = s.team().id;
    key = s.key(team, 'live', ['emails:read', 'domains:read']);
    domainId = newId('dom', Date.now());
    s.db
      .prepare(
        `INSERT INTO domains (id, team_id, name, status, created_at) VALUES (?, ?, 'example.com', 'verified', ?)`,
      )
      .run(domainId, team, Date.now());
    const today = Math.floor(Date.now() / DAY) * DAY;
    // Signed by their reporters (a summary counts only reports something aligned with the reporter vouches for).
    const keys = { 'google.com': reporterKey(dns, 'google.com'), Yahoo: reporterKey(dns, 'yahoo.com') };
    for (let d = 13; d >= 0; d--) {
      const fail = d % 4 === 1 ? 40 : 3;
      for (const org of ['google.com', 'Yahoo'] as const) {
        const rows = [
          { ip: '192.0.2.10', count: 400 + 17 * d },
          { ip: '203.0.113.5', count: fail, dkim: 'fail' as const, spf: 'fail' as const, disp: 'reject' },
          { ip: '198.51.100.7', count: 25, spf: 'fail' as const, dkim: d % 3 ? ('pass' as const) : ('fail' as const) },
        ];
        const email = `dmarc@${keys[org].domain}`;
        const msg = await signedBy(
          keys[org],
          aggregateReport(org, `${org}-${d}`, 'example.com', today - d * DAY, rows, email),
        );
        const r = await smtpSend(smtpPort(s), { from: 'r@reports.example', to: ['dmarc@bounces.mta.test'] }, msg);
        expect(r.response).to.match(/^250 2\.0\.0 DMARC report dmr_/);
      }
    }
    browser = await launch();
    page = await (await newContext(browser)).newPage();
  });
  after(async () => {
    await browser?.close();
    await s?.close();
    await dns?.stop();
  });

  it('shows the pass rate by day and the sources, failing foreign ones first, axe-clean', async () => {
    await signIn(page, s.url, key);
    await page.goto(`${s.url}/dashboard/domains/${domainId}`);
    expect(await page.getByRole('img', { name: 'DMARC pass rate by day, last 30 days' }).count()).to.equal(1);
    expect(await page.locator('#chart-dmarc polyline').count()).to.equal(1);
    const first = page.locator('#dmarc-sources tbody tr').first();
    expect(await first.locator('code').textContent()).to.equal('203.0.113.5');
    expect(await first.textContent()).to.contain('mail.lookalike-shop.example');
    expect(await page.locator('#dmarc-sources [data-ours="true"]').count()).to.equal(1);
    expect(await seriousViolations(page)).to.deep.equal([]);
    await screenshot(page, 'domain-dmarc');
  });
});
