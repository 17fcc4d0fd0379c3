// The Queue page in a real browser (Debian's Chromium via playwright-core) against the real service, delivery loop
// and a loopback MX: the operator's summaries and a bulk hold through its confirmation; a team's hold/release/cancel.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { outboundEnv, sleep, type OutboundEnv } from '../integration/outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { listSites } from '../../src/services/delivery-control.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

const PASSWORD = 'correct horse battery staple';
const LATER = () => new Date(Date.now() + 3600e3).toISOString();

describe('Queue page in a browser', function () {
  this.timeout(40_000);
  let env: OutboundEnv;
  let browser: Browser;
  let otherKey: string;
  let otherId: string;
  let cancelId: string;

  before(async () => {
    env = await outboundEnv({
      features: [outbound, dashboard],
      env: {
        MTA_DASHBOARD_PASSWORD: PASSWORD,
        MTA_RETRY_MIN_SECONDS: '600',
        MTA_RETRY_MAX_SECONDS: '3600',
        MTA_QUEUE_LIFETIME_SECONDS: '86400',
      },
      script: { rcpt: (to) => (to.startsWith('later') ? { code: 451, message: '4.7.1 Try again later' } : undefined) },
    });
    // The loop learns each domain's site by routing mail to it.
    for (const to of ['first@rcpt.test', 'first@other.test'])
      await env.waitStatus((await env.send({ to })).id, ['delivered']);
    const deferred = await env.send({ to: ['later1@rcpt.test', 'later2@rcpt.test'] });
    await env.waitStatus(deferred.id, ['delivery_delayed']);
    for (let i = 0; i < 3; i++) await env.send({ to: `s${i}@other.test`, scheduled_at: LATER() });
    const other = env.s.team('Bravo Mail');
    insertVerifiedDomain(env.s.db, other.id, 'bravo.test');
    env.s.credits(other.id, 100);
    otherKey = env.s.key(other.id, 'live', ['emails:send', 'emails:read']);
    const bravo = async (to: string) => {
      const r = await env.s.api('POST', '/v1/emails', {
        key: otherKey,
        body: { from: 'app@bravo.test', to, subject: 'Digest', text: 'x', scheduled_at: LATER() },
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      return r.body.id as string;
    };
    otherId = await bravo('news@rcpt.test');
    cancelId = await bravo('promo@rcpt.test');
    const until = Date.now() + 3000; // the loop stores its sites once a second
    while (
      (await listSites(env.s.ctx)).filter((x) => /rcpt\.test|other\.test/.test(x.site)).length < 2 &&
      Date.now() < until
    )
      await sleep(100);
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await env?.close();
  });

  const cells = (page: Page, table: string, row: string) =>
    page
      .getByRole('table', { name: table })
      .getByRole('row', { name: new RegExp(`^${row.replace(/\./g, '\\.')}\\b`) })
      .locator('td')
      .allTextContents();

  it('shows the operator the queue by site, team and state, and holds by filter after a confirmation', async () => {
    const page = await (await newContext(browser)).newPage();
    await page.goto(`${env.s.url}/dashboard/sign-in`);
    await page.locator('#password').fill(PASSWORD);
    await page.locator('#team').fill(env.teamId);
    await page.getByRole('button', { name: 'Sign in as operator' }).click();
    await page.waitForURL(/\/dashboard\/emails/);
    await page.getByRole('link', { name: 'Queue' }).click();
    await page.waitForURL(/\/dashboard\/queue/);
    // recipients, held, deferred (oldest seconds varies)
    expect((await cells(page, 'By site', 'mx.rcpt.test')).slice(0, 3)).to.deep.equal(['4', '0', '2']);
    expect((await cells(page, 'By site', 'mx.other.test')).slice(0, 3)).to.deep.equal(['3', '0', '0']);
    expect((await cells(page, 'By team', 'Bravo Mail')).slice(0, 3)).to.deep.equal(['2', '0', '0']);
    expect((await cells(page, 'By state', 'scheduled'))[0]).to.equal('5');
    expect((await cells(page, 'By state', 'deferred'))[0]).to.equal('2');
    const oldest = page.getByRole('table', { name: /Waiting recipients/ });
    expect(await oldest.getByRole('row', { name: /later1@rcpt\.test/ }).textContent()).to.contain('Try again later');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await screenshot(page, 'queue');

    const bulk = page.getByRole('form', { name: 'Bulk action' });
    await bulk.getByLabel('Recipient domain').fill('other.test');
    await bulk.getByLabel('Action').selectOption('hold');
    await bulk.getByRole('button', { name: 'Review' }).click();
    await page.waitForURL(/\/dashboard\/queue\/confirm/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Confirm: hold');
    expect(await page.locator('main').textContent()).to.contain('3 waiting recipients match');
    expect(await seriousViolations(page)).to.deep.equal([]);
    const held = () => env.s.db.prepare('SELECT count(*) FROM deliveries WHERE held_at IS NOT NULL').pluck().get();
    expect(held(), 'nothing changes before the confirmation').to.equal(0);
    await page.getByRole('button', { name: 'Yes, hold them' }).click();
    await page.waitForURL(/done=hold/);
    expect(await page.getByRole('status').textContent()).to.contain('Held 3 recipients.');
    expect((await cells(page, 'By site', 'mx.other.test')).slice(0, 2)).to.deep.equal(['3', '3']);
    expect(held()).to.equal(3);
    expect(await page.locator('#queue tbody tr[data-state="held"]').count()).to.equal(3);
    await page.context().close();
  });

  it("lets a team hold, release and cancel its own waiting mail, and nobody else's", async () => {
    const page = await (await newContext(browser)).newPage();
    await signIn(page, env.s.url, otherKey);
    await page.getByRole('link', { name: 'Queue' }).click();
    await page.waitForURL(/\/dashboard\/queue/);
    const rows = page.locator('#queue tbody tr');
    const row = (to: string) => page.locator('#queue tbody tr', { hasText: to });
    expect(await rows.count(), "only this team's two recipients").to.equal(2);
    expect(await page.locator('main').textContent()).to.not.contain('other.test');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await page.getByRole('button', { name: `Hold ${otherId}` }).click();
    await page.waitForURL(/done=hold/);
    expect(await page.getByRole('status').textContent()).to.contain('Held 1 recipients.');
    expect(await row('news@rcpt.test').getAttribute('data-state')).to.equal('held');
    expect(await row('promo@rcpt.test').getAttribute('data-state')).to.equal('scheduled');
    expect(await seriousViolations(page)).to.deep.equal([]);
    await page.getByRole('button', { name: `Release ${otherId}` }).click();
    await page.waitForURL(/done=release/);
    expect(await page.getByRole('status').textContent()).to.contain('Released 1 recipients.');
    // A released recipient that was never attempted waits for its scheduled time again (never sent early).
    expect(await row('news@rcpt.test').getAttribute('data-state')).to.equal('scheduled');
    await page.getByRole('button', { name: `Cancel ${cancelId}` }).click();
    await page.waitForURL(/done=cancel/);
    expect(await page.getByRole('status').textContent()).to.contain('canceled');
    expect(await rows.count(), 'only the released, still scheduled recipient waits').to.equal(1);
    expect(await row('news@rcpt.test').getAttribute('data-state')).to.equal('scheduled');
    expect((await env.s.api('GET', `/v1/emails/${cancelId}`, { key: otherKey })).body.status).to.equal('canceled');
    await page.context().close();
  });
});
