// The dashboard in a real browser (Debian's Chromium via playwright-core) against the real service on
// port 0: sign-in, list with the test tag, timelines, filters, live refresh, suppressions, keys, axe, screenshots.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { TestDns } from '../helpers/dns.js';
import { publish } from '../helpers/domains.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { tx } from '../../src/store/db.js';
import { deliveriesOf, emailById } from '../../src/store/emails.js';
import { applyOutcomesPlan } from '../../src/services/transition.js';
import { addDomain } from '../../src/services/domains.js';
import { launch, newContext, seriousViolations, screenshot, signIn } from './browser.js';
import { runSync } from '../../src/store/op.js';

const ALL = ['emails:send', 'emails:read', 'domains:read', 'domains:write', 'webhooks:write', 'keys:write'] as const;

describe('dashboard in a browser', function () {
  this.timeout(15_000);
  let s: TestService;
  let dns: TestDns;
  let receiver: http.Server;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let admin: string;
  let testKey: string;
  let liveId: string;
  let testId: string;

  const seqOf = (teamId: string, id: string) => runSync(emailById(s.db, teamId, id))!.seq;

  before(async () => {
    dns = await new TestDns().start();
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.statusCode = req.url === '/gone' ? 410 : 200;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    s = await startTestService({
      features: [webhooks, dashboard],
      env: {
        MTA_RATE_LIMIT: '0',
        MTA_DNS_SERVERS: dns.server,
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.5',
        MTA_SENDING_IPS: '192.0.2.10',
      },
    });
    const team = s.team('Acme Shop');
    admin = s.key(team.id, 'live', [...ALL]);
    testKey = s.key(team.id, 'test');
    s.key(team.id, 'test');
    insertVerifiedDomain(s.db, team.id, 'shop.test');
    s.credits(team.id, 100);
    const d = await addDomain(s.ctx, team.id, 'news.shop.test');
    publish(dns, d, ['spf', 'dkim']);
    expect(
      (
        await s.api('POST', '/v1/webhooks', {
          key: admin,
          body: { url: `${hook}/ok`, events: ['queued', 'sent', 'delivered', 'bounced'] },
        })
      ).status,
    ).to.equal(201);
    expect(
      (await s.api('POST', '/v1/webhooks', { key: admin, body: { url: `${hook}/gone`, events: ['bounced'] } })).status,
    ).to.equal(201);
    const live = await s.api('POST', '/v1/emails', {
      key: admin,
      body: {
        from: 'Acme <orders@shop.test>',
        to: ['ann@rcpt.test', 'nobody@rcpt.test'],
        subject: 'Your receipt #1042',
        text: 'Thanks',
        tags: ['receipt'],
      },
    });
    const test = await s.api('POST', '/v1/emails', {
      key: testKey,
      body: {
        from: 'auth@example.test',
        to: 'delivered@example.test',
        subject: 'Your sign-in code',
        text: '123456',
        tags: ['auth'],
      },
    });
    expect([live.status, test.status]).to.deep.equal([202, 202]);
    liveId = live.body.id;
    testId = test.body.id;
    const [ann, nobody] = runSync(deliveriesOf(s.db, seqOf(team.id, liveId)));
    tx(s.db, () =>
      runSync(
        applyOutcomesPlan(s.ctx, seqOf(team.id, liveId), [
          {
            deliveryId: ann.id,
            event: 'accepted',
            data: {
              attempt: 1,
              mx_host: 'mx1.rcpt.test',
              remote_ip: '127.0.0.1',
              smtp_code: 250,
              enhanced_status: '2.0.0',
              smtp_response: '250 2.0.0 OK queued as 7F3A',
              tls_version: 'TLSv1.3',
              duration_ms: 41,
              source: 'smtp',
            },
          },
          {
            deliveryId: nobody.id,
            event: 'rejected',
            data: {
              attempt: 1,
              mx_host: 'mx1.rcpt.test',
              smtp_code: 550,
              enhanced_status: '5.1.1',
              smtp_response: '550 5.1.1 <nobody@rcpt.test>: user unknown',
              reason: 'userunknown',
              hard: true,
              source: 'smtp',
            },
          },
        ]),
      ),
    );
    browser = await launch();
    context = await newContext(browser);
    page = await context.newPage();
  });

  after(async () => {
    await browser?.close();
    await s?.close();
    await dns?.stop();
    receiver?.close();
  });

  it('sends visitors to sign-in and refuses an unknown key', async () => {
    await page.goto(`${s.url}/dashboard/emails`);
    expect(page.url()).to.match(/\/dashboard\/sign-in\?next=/);
    expect(await seriousViolations(page)).to.deep.equal([]);
    await page.locator('#key').fill('ps_live_not-a-real-key');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    expect(await page.getByRole('alert').textContent()).to.contain('unknown or revoked');
  });

  it('signs in and lists the live and the test email, newest first, the test one tagged', async () => {
    await signIn(page, s.url, admin);
    const rows = page.locator('tbody tr');
    expect(await rows.count()).to.equal(2);
    expect(await rows.nth(0).getAttribute('data-email-id')).to.equal(testId);
    expect(await rows.nth(0).locator('.tag-test').textContent()).to.equal('test');
    expect(await rows.nth(1).locator('.tag-test').count()).to.equal(0);
    expect(await rows.nth(1).textContent())
      .to.contain('Your receipt #1042')
      .and.contain('bounced')
      .and.contain('nobody@rcpt.test');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await screenshot(page, 'emails');
  });

  it('filters by status with the filter form, and by recipient', async () => {
    await page.getByLabel('Status').selectOption('bounced');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/status=bounced/);
    expect(await page.locator('tbody tr').count()).to.equal(1);
    expect(await page.locator('tbody tr').getAttribute('data-email-id')).to.equal(liveId);
    await page.goto(`${s.url}/dashboard/emails?q=delivered%40example`);
    expect(await page.locator('tbody tr').count()).to.equal(1);
    expect(await page.locator('tbody tr').getAttribute('data-email-id')).to.equal(testId);
  });

  it("opens an email and shows each recipient's delivery events", async () => {
    await page.goto(`${s.url}/dashboard/emails`);
    await page.getByRole('link', { name: 'Your receipt #1042' }).click();
    await page.waitForURL(new RegExp(`/dashboard/emails/${liveId}$`));
    const ann = page.locator('section.card', { has: page.getByRole('heading', { name: /ann@rcpt\.test/ }) });
    expect(await ann.textContent())
      .to.contain('250 2.0.0 OK queued as 7F3A')
      .and.contain('mx1.rcpt.test')
      .and.contain('TLSv1.3')
      .and.contain('delivered');
    const nobody = page.locator('section.card', { has: page.getByRole('heading', { name: /nobody@rcpt\.test/ }) });
    expect(await nobody.textContent())
      .to.contain('550 5.1.1')
      .and.contain('userunknown (hard: address suppressed)')
      .and.contain('bounced');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await screenshot(page, 'email-detail');
  });

  it('refreshes a status live while the list is open', async () => {
    await page.goto(`${s.url}/dashboard/emails`);
    const badge = page.locator(`tr[data-email-id="${testId}"] .badge`);
    expect(await badge.textContent()).to.equal('queued');
    const email = runSync(
      emailById(s.db, s.db.prepare('SELECT team_id FROM emails WHERE id = ?').pluck().get(testId) as string, testId),
    )!;
    const [d] = runSync(deliveriesOf(s.db, email.seq));
    tx(s.db, () =>
      runSync(
        applyOutcomesPlan(s.ctx, email.seq, [{ deliveryId: d.id, event: 'accepted', data: { source: 'simulated' } }]),
      ),
    );
    await page.locator(`tr[data-email-id="${testId}"] .badge[data-status="delivered"]`).waitFor({ timeout: 8000 });
  });

  it("shows a domain's records with each check result after a re-check", async () => {
    await page.goto(`${s.url}/dashboard/domains`);
    expect(await seriousViolations(page)).to.deep.equal([]);
    await page.getByRole('link', { name: 'news.shop.test' }).click();
    await page.getByRole('button', { name: 'Check records now' }).click();
    await page.waitForURL(/notice=domain_checked/);
    const row = (purpose: string) =>
      page.locator('tbody tr', { has: page.locator('td', { hasText: new RegExp(`^${purpose}$`) }) });
    expect(await row('dkim').locator('.badge').textContent()).to.equal('verified');
    expect(await row('spf').locator('.badge').textContent()).to.equal('verified');
    expect(await row('dmarc').locator('.badge').textContent()).to.not.equal('verified');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await screenshot(page, 'domains');
  });

  it('shows webhook endpoints with their recent deliveries', async () => {
    const until = Date.now() + 8000;
    while (
      Date.now() < until &&
      (s.db.prepare("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").pluck().get() as number) > 0
    )
      await new Promise((r) => setTimeout(r, 50));
    await page.goto(`${s.url}/dashboard/webhooks`);
    const ok = page.locator('section', { has: page.getByRole('heading', { name: /\/ok$/ }) });
    expect(await ok.locator('tbody tr').count()).to.be.greaterThan(2);
    expect(await ok.textContent())
      .to.contain('HTTP 200')
      .and.contain('succeeded');
    const gone = page.locator('section', { has: page.getByRole('heading', { name: /\/gone$/ }) });
    expect(await gone.textContent())
      .to.contain('HTTP 410')
      .and.contain('failed');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await screenshot(page, 'webhooks');
  });

  it('removes an address from the suppression list', async () => {
    await page.goto(`${s.url}/dashboard/suppressions`);
    expect(await seriousViolations(page)).to.deep.equal([]);
    expect(await page.locator('tbody').textContent()).to.contain('nobody@rcpt.test');
    await page.getByRole('button', { name: 'Remove nobody@rcpt.test from the suppression list' }).click();
    expect(await page.getByRole('status').textContent()).to.contain('removed');
    expect(await page.locator('tbody').count()).to.equal(0);
    expect((await s.api('GET', '/v1/suppressions', { key: admin })).body.data).to.deep.equal([]);
  });

  it('creates a key (shown once) and revokes another, which stops working at once', async () => {
    await page.goto(`${s.url}/dashboard/keys`);
    await page.getByLabel('Name').fill('ci deploys');
    await page.getByRole('button', { name: 'Create key' }).click();
    const full = await page.getByLabel(/shown only once/).inputValue();
    expect(full).to.match(/^ps_test_/);
    expect((await s.api('GET', '/v1/emails', { key: full })).status).to.equal(200);
    await screenshot(page, 'keys');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await page.goto(`${s.url}/dashboard/keys`);
    expect(await page.content()).to.not.contain(full);
    await page.getByRole('button', { name: `Revoke key ${testKey.slice(0, 12)}` }).click();
    expect(await page.getByRole('status').textContent()).to.contain('revoked');
    expect((await s.api('GET', '/v1/emails', { key: testKey })).status).to.equal(401);
  });

  it('shows the credit balance', async () => {
    await page.goto(`${s.url}/dashboard/credits`);
    expect(await page.locator('#credits-available').textContent()).to.equal(String(3000 + 100 - 2));
    expect(await seriousViolations(page)).to.deep.equal([]);
  });

  it('reads well on a phone', async () => {
    const phone = await newContext(browser, { width: 390, height: 844 });
    const p = await phone.newPage();
    await signIn(p, s.url, admin);
    const width = await p.evaluate(() => document.documentElement.scrollWidth);
    expect(width).to.be.at.most(390);
    expect(await seriousViolations(p)).to.deep.equal([]);
    await screenshot(p, 'emails-phone');
    await phone.close();
  });

  it('ends the session when its own key is revoked', async () => {
    await page.goto(`${s.url}/dashboard/keys`);
    const ownRow = page.locator('tbody tr', { hasText: '(this session)' });
    await ownRow.getByRole('button', { name: /^Revoke key/ }).click();
    await page.waitForURL(/\/dashboard\/sign-in/);
    await page.goto(`${s.url}/dashboard/emails`);
    expect(page.url()).to.match(/\/dashboard\/sign-in/);
  });
});
