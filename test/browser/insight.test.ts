// The Overview and Delivery pages in a real browser (Debian's Chromium via playwright-core) against the real
// service, delivery loop and a loopback MX: charts readable, axe-core clean (no serious/critical), screenshots.
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { outboundEnv, type OutboundEnv } from '../integration/outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { listSites, siteCommand, warmupIp } from '../../src/services/delivery-control.js';
import { HOUR_MS } from '../../src/services/stats.js';
import { bumpSite, bumpStat } from '../../src/store/stats.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';
import { runSync } from '../../src/store/op.js';
import { saveSts } from '../../src/services/tls-policy.js';
import { bumpTlsCount } from '../../src/store/tls-reports.js';

const PASSWORD = 'correct horse battery staple';

/** Earlier hours' counters, as the delivery loop would have left them (the current hour comes from real mail). */
function seedHistory(env: OutboundEnv, site: string): void {
  const now = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
  for (let h = 1; h < 24; h++) {
    const sent = 20 + Math.round(15 * Math.sin(h / 3)) + h;
    const bounced = h % 5 === 0 ? 2 : h % 3 === 0 ? 1 : 0;
    const at = now - h * HOUR_MS;
    for (const [type, n] of [
      ['sent', sent],
      ['delivered', sent - bounced],
      ['bounced', bounced],
      ['delivery_delayed', h % 4],
    ] as const)
      if (n > 0) runSync(bumpStat(env.s.db, env.teamId, 0, at, type, n));
    runSync(bumpSite(env.s.db, site, at, 'delivered', sent - bounced));
    if (bounced) runSync(bumpSite(env.s.db, site, at, 'bounced', bounced));
    if (h % 4) runSync(bumpSite(env.s.db, site, at, 'deferred', h % 4));
  }
}

describe('delivery insight pages in a browser', function () {
  this.timeout(30_000);
  let env: OutboundEnv;
  let browser: Browser;
  let page: Page;
  let site: string;
  let annId: string;

  before(async () => {
    env = await outboundEnv({
      features: [outbound, dashboard],
      env: { MTA_DASHBOARD_PASSWORD: PASSWORD, MTA_SENDING_IPS: '127.0.0.1' },
      script: { rcpt: (to) => (to.startsWith('unknown') ? { code: 550, message: '5.1.1 No such user' } : undefined) },
    });
    await warmupIp(env.s.ctx, '127.0.0.1', 2, false);
    await new Promise((r) => setTimeout(r, 1200)); // the loop applies the warm-up within a second
    const ids: string[] = [];
    for (const to of ['ann@rcpt.test', 'bob@rcpt.test', 'cy@rcpt.test', 'unknown@rcpt.test'])
      ids.push((await env.send({ to })).id);
    for (const id of ids) await env.waitStatus(id, ['delivered', 'bounced'], 10_000);
    annId = ids[0];
    const until = Date.now() + 3000; // the loop stores its sites once a second
    while (!(await listSites(env.s.ctx)).some((x) => x.site.includes('rcpt.test')) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    site = (await listSites(env.s.ctx)).find((x) => x.site.includes('rcpt.test'))!.site;
    seedHistory(env, site);
    browser = await launch();
    page = await (await newContext(browser)).newPage();
  });
  after(async () => {
    await browser?.close();
    await env?.close();
  });

  it("shows a team's overview charts, readable and axe-clean", async () => {
    await signIn(page, env.s.url, env.live);
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.waitForURL(/\/dashboard\/overview/);
    const counts = page.getByRole('img', { name: 'Emails by status, last 24 hours' });
    expect(await counts.count()).to.equal(1);
    expect(await page.getByRole('img', { name: /Bounce and complaint rates/ }).count()).to.equal(1);
    expect(await page.locator('[data-stat="sent"]').textContent()).to.not.equal('4');
    expect(await page.locator('#chart-counts polyline').count()).to.equal(5);
    await page.getByText('Numbers: Emails by status, last 24 hours').click();
    const lastRow = page.locator('#chart-counts tbody tr').last();
    expect(await lastRow.locator('td').first().textContent()).to.equal('4'); // this hour: the 4 real emails sent
    expect(await seriousViolations(page)).to.deep.equal([]);
    await page.getByText('Numbers: Emails by status, last 24 hours').click();
    await screenshot(page, 'overview');
    await page.getByRole('link', { name: 'Last 30 days' }).click();
    await page.waitForURL(/range=30d/);
    expect(await page.getByRole('img', { name: 'Emails by status, last 30 days' }).count()).to.equal(1);
    expect(await seriousViolations(page)).to.deep.equal([]);
  });

  it("shows each attempt's TLS outcome in the email's timeline", async () => {
    await page.goto(`${env.s.url}/dashboard/emails/${annId}`);
    const ann = page.locator('section.card', { has: page.getByRole('heading', { name: /ann@rcpt\.test/ }) });
    // the test MX offers STARTTLS with smtp-server's self-signed certificate; rcpt.test publishes no policy
    expect(await ann.textContent()).to.match(/TLSv1\.[23] \S+; certificate not verified; policy opportunistic/);
    expect(await seriousViolations(page)).to.deep.equal([]);
  });

  it('shows the operator the Delivery page with sites, a suspension, warm-up progress and charts', async () => {
    // A cached MTA-STS policy, and TLS failures counted today for another domain.
    await saveSts(env.s.ctx, 'secure.example', '1', { mode: 'enforce', mx: ['mx.secure.example'], max_age: 86400 });
    const day = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    const key = { day, policy_type: 'sts', policy: '{}', mx_host: 'mx.broken.example', receiving_ip: '192.0.2.1' };
    runSync(
      bumpTlsCount(
        env.s.db,
        { ...key, domain: 'broken.example', result_type: 'certificate-expired', sending_ip: '' },
        3,
      ),
    );
    await siteCommand(env.s.ctx, { kind: 'suspend', site, ip: null, seconds: 900, reason: 'maintenance window' });
    const ctx = await newContext(browser);
    const op = await ctx.newPage();
    await op.goto(`${env.s.url}/dashboard/sign-in`);
    await op.locator('#password').fill(PASSWORD);
    await op.locator('#team').fill(env.teamId);
    await op.getByRole('button', { name: 'Sign in as operator' }).click();
    await op.waitForURL(/\/dashboard\/emails/);
    await op.getByRole('link', { name: 'Delivery' }).click();
    await op.waitForURL(/\/dashboard\/delivery/);
    const row = op.locator(`tr[data-site="${site}"]`);
    expect(await row.textContent()).to.contain('suspended');
    expect(await op.locator('#suspensions').textContent()).to.contain('maintenance window');
    const progress = op.getByRole('progressbar', {
      name: new RegExp(`127\\.0\\.0\\.1 to ${site.replace(/\./g, '\\.')}`),
    });
    expect(await progress.getAttribute('value')).to.equal('4');
    expect(
      await op.getByRole('img', { name: new RegExp(`^${site.replace(/\./g, '\\.')}: delivery attempts`) }).count(),
    ).to.equal(1);
    expect(await op.locator('tr[data-domain="secure.example"]').textContent())
      .to.contain('enforce')
      .and.contain('mx.secure.example');
    expect(await op.locator('tr[data-domain="broken.example"]').textContent()).to.contain('certificate-expired 3');
    expect(await seriousViolations(op)).to.deep.equal([]);
    await screenshot(op, 'delivery');
    await ctx.close();
  });
});
