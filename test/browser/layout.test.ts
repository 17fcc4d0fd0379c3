// Dashboard layout on a phone (390 px) and a laptop (1280 px) in Chromium: nothing scrolls sideways with a long
// recipient address or subject, the operator's header holds on one line, a date stays on one line, the empty keys
// page says so, and an error page names the team rather than its raw id.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { launch, newContext, signIn } from './browser.js';

const PASSWORD = 'correct horse battery staple';
const PHONE = { width: 390, height: 844 };
// No hyphen or space to break at: the browser wraps them only where the stylesheet lets it.
const LONG_RCPT = `${'averylonglocalpart'.repeat(2)}@${'notificationsdepartment'.repeat(2)}.exampleshop.test`;
const LONG_SUBJECT = `Your order ${'ConfirmationAndShippingUpdate'.repeat(3)} has shipped today`;

describe('dashboard layout in a browser (390 px and 1280 px)', function () {
  this.timeout(30_000);
  let s: TestService;
  let browser: Browser;
  let key: string;
  let teamId: string;
  let emptyTeamId: string;
  let emailId: string;

  const noSideScroll = (page: Page) =>
    page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));

  async function operator(page: Page, team: string): Promise<void> {
    await page.goto(`${s.url}/dashboard/sign-in`);
    await page.locator('#password').fill(PASSWORD);
    await page.locator('#team').fill(team);
    await page.getByRole('button', { name: 'Sign in as operator' }).click();
    await page.waitForURL(/\/dashboard\/emails/);
  }

  before(async () => {
    s = await startTestService({
      features: [dashboard],
      env: { MTA_RATE_LIMIT: '0', MTA_DASHBOARD_PASSWORD: PASSWORD },
    });
    const team = s.team('Layout Shop');
    teamId = team.id;
    emptyTeamId = s.team('Keyless Co').id;
    key = s.key(team.id, 'test');
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'shop@shop.test', to: [LONG_RCPT], subject: LONG_SUBJECT, text: 'hello' },
    });
    expect(r.status).to.equal(202);
    emailId = r.body.id;
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await s?.close();
  });

  it('phone: the email detail with a long recipient address does not scroll sideways', async () => {
    const page = await (await newContext(browser, PHONE)).newPage();
    await signIn(page, s.url, key);
    await page.goto(`${s.url}/dashboard/emails/${emailId}`);
    await page.getByRole('heading', { name: 'Delivery timeline' }).waitFor();
    const w = await noSideScroll(page);
    expect(w.scroll, JSON.stringify(w)).to.be.at.most(w.inner);
  });

  it('phone: the emails list shows a long subject whole, without sideways scrolling', async () => {
    const page = await (await newContext(browser, PHONE)).newPage();
    await signIn(page, s.url, key);
    const w = await noSideScroll(page);
    expect(w.scroll, JSON.stringify(w)).to.be.at.most(w.inner);
    const link = page.getByRole('link', { name: LONG_SUBJECT });
    await link.waitFor();
    // Every part of the subject is inside the viewport and inside its scroll box (nothing hidden to the right).
    const box = await link.evaluate((a) => {
      const wrap = a.closest('.table-wrap') as HTMLElement;
      const rects = [...a.getClientRects()].map((r) => r.right);
      return {
        right: Math.max(...rects),
        wrapRight: wrap.getBoundingClientRect().right,
        wrapScroll: wrap.scrollWidth,
        wrapClient: wrap.clientWidth,
      };
    });
    expect(box.right, JSON.stringify(box)).to.be.at.most(box.wrapRight);
    expect(box.wrapScroll, JSON.stringify(box)).to.be.at.most(box.wrapClient);
  });

  it("laptop: the operator's header holds on one line, and the Sent date on one line", async () => {
    const page = await (await newContext(browser)).newPage();
    await operator(page, teamId);
    const tops = await page.evaluate(() =>
      [...document.querySelectorAll('header.top > *')].map((el) => Math.round(el.getBoundingClientRect().top)),
    );
    const header = await page.locator('header.top').evaluate((h) => h.getBoundingClientRect().height);
    expect(header, `header ${header}px, items at ${tops}`).to.be.below(60);
    const sent = await page
      .locator('td[data-label="Sent"] time')
      .first()
      .evaluate((t) => t.getClientRects().length);
    expect(sent, 'lines of the Sent date').to.equal(1);
  });

  it('the keys page of a team without keys says so instead of an empty table', async () => {
    const page = await (await newContext(browser)).newPage();
    await operator(page, emptyTeamId);
    await page.goto(`${s.url}/dashboard/keys`);
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    expect(await page.locator('main').innerText()).to.match(/no API keys/i);
    expect(await page.locator('main table').count()).to.equal(0);
  });

  it('a 404 page names the team, never its raw id', async () => {
    const page = await (await newContext(browser)).newPage();
    await signIn(page, s.url, key);
    const res = await page.goto(`${s.url}/dashboard/no-such-page`);
    expect(res?.status()).to.equal(404);
    const text = await page.locator('body').innerText();
    expect(text).to.contain('Not found');
    expect(text).not.to.contain(teamId);
    expect(text).to.contain('Layout Shop');
  });
});
