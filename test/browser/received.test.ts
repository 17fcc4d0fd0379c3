// The Received page (issue 35) in a real browser (Debian's Chromium via playwright-core): a message sent to a
// receiving domain through the inbound listener is listed with its sender, subject and verdicts, axe-core clean (no
// serious/critical), screenshot docs/screenshots/received.png.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { smtpPort, smtpSend } from '../integration/inbound-fixtures.js';
import { feature as inbound } from '../../src/features/inbound.js';
import { feature as domains } from '../../src/features/domains.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

describe('Received page in a browser', function () {
  this.timeout(60_000);
  let s: TestService;
  let dns: TestDns;
  let browser: Browser;
  let page: Page;
  let key: string;

  before(async () => {
    dns = await new TestDns().start();
    dns.set('customer.test', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
    s = await startTestService({
      features: [inbound, domains, dashboard],
      env: { MTA_DNS_SERVERS: dns.server, MTA_DNS_CHECK_CRON: '0 0 1 1 *', MTA_RATE_LIMIT: '0' },
    });
    const team = s.team().id;
    key = s.key(team, 'live', ['domains:read', 'domains:write', 'emails:read']);
    const d = await s.api('POST', '/v1/domains', { key, body: { name: 'support.example.test' } });
    expect((await s.api('PATCH', `/v1/domains/${d.body.id}`, { key, body: { receiving: true } })).status).to.equal(200);
    const msg = [
      'From: Ada Customer <ada@customer.test>',
      'To: reply+ticket42@support.example.test',
      'Subject: Re: your receipt',
      'Message-ID: <browser-1@customer.test>',
      '',
      'Thanks, all good.',
      '',
    ].join('\r\n');
    const r = await smtpSend(
      smtpPort(s),
      { from: 'ada@customer.test', to: ['reply+ticket42@support.example.test'] },
      msg,
    );
    expect(r.ok, r.response).to.equal(true);
    browser = await launch();
    page = await (await newContext(browser)).newPage();
  });
  after(async () => {
    await browser?.close();
    await s?.close();
    await dns?.stop();
  });

  it('lists the received message with its sender and subject, fitting the screen, axe-clean', async () => {
    await signIn(page, s.url, key);
    await page.goto(`${s.url}/dashboard/received`);
    const text = await page.locator('main').textContent();
    expect(text).to.contain('Re: your receipt');
    expect(text).to.contain('ada@customer.test');
    const wrap = await page.locator('.table-wrap').evaluate((w) => ({ scroll: w.scrollWidth, client: w.clientWidth }));
    expect(wrap.scroll, 'the table fits a laptop screen without sideways scrolling').to.be.at.most(wrap.client);
    expect(await seriousViolations(page)).to.deep.equal([]);
    await screenshot(page, 'received');
  });
});
