// The Overview and Delivery dashboard pages over HTTP against the real service, delivery loop and a loopback
// MX: SVG charts with title, description and a data table matching /v1/stats; Delivery for operators only.
import { expect } from 'chai';
import { outboundEnv, type OutboundEnv } from './outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { siteCommand, listSites } from '../../src/services/delivery-control.js';
import { FormClient } from '../helpers/form-client.js';

const PASSWORD = 'correct horse battery staple';

/** The figures of a page: id, svg title, description and the data table's rows. */
function figures(page: string) {
  return [...page.matchAll(/<figure class="chart[^"]*" id="([^"]+)"[\s\S]*?<\/figure>/g)].map((m) => ({
    id: m[1],
    svg: /<svg[^>]*role="img"[^>]*>/.test(m[0]),
    title: /<title id="[^"]+">([\s\S]*?)<\/title>/.exec(m[0])?.[1].trim(),
    desc: /<desc id="[^"]+">([\s\S]*?)<\/desc>/.exec(m[0])?.[1].trim(),
    rows: [...m[0].matchAll(/<tr>\s*<th scope="row">[^<]*<\/th>([\s\S]*?)<\/tr>/g)].map((r) =>
      [...r[1].matchAll(/<td>([^<]*)<\/td>/g)].map((c) => c[1].trim()),
    ),
  }));
}

describe('dashboard Overview and Delivery pages', function () {
  this.timeout(30_000);
  let env: OutboundEnv;

  before(async () => {
    env = await outboundEnv({
      features: [outbound, dashboard],
      env: { MTA_DASHBOARD_PASSWORD: PASSWORD },
      script: { rcpt: (to) => (to.startsWith('unknown') ? { code: 550, message: '5.1.1 No such user' } : undefined) },
    });
    const ids: [string, string][] = [];
    for (const to of ['delivered', 'bounced', 'complained', 'delayed'])
      ids.push([(await env.send({ to: `${to}@example.test` }, env.test)).id, env.test]);
    for (const to of ['a@rcpt.test', 'b@rcpt.test', 'unknown@rcpt.test'])
      ids.push([(await env.send({ to }, env.live)).id, env.live]);
    for (const [id, key] of ids) await env.waitStatus(id, ['delivered', 'bounced', 'complained'], 10_000, key);
  });
  after(() => env?.close());

  it('shows a test session its test-mode counts as charts with title, description and numbers', async () => {
    const c = new FormClient(env.s.url);
    expect((await c.signInWith({ key: env.test })).status).to.equal(303);
    const page = await c.req('GET', '/dashboard/overview');
    expect(page.status).to.equal(200);
    expect(page.text).to.contain('Test mode: simulated emails only.');
    expect(page.text)
      .to.match(/data-stat="sent">4</)
      .and.match(/data-stat="bounced">1</);
    expect(page.text).to.match(/data-stat="complained">1</);
    expect(page.text).to.contain('above the 0.3% limit'); // 1 complaint per 3 delivered
    expect(page.text).to.not.match(/ style=|<script>/);
    const [counts, rates] = figures(page.text);
    expect(counts).to.include({ id: 'chart-counts', svg: true });
    expect(counts.title).to.equal('Emails by status, last 24 hours');
    expect(counts.desc).to.contain('sent: total 4').and.contain('bounced: total 1');
    const sums = counts.rows.reduce((a, r) => a.map((x, i) => x + Number(r[i])), [0, 0, 0, 0, 0]);
    const api = (await env.s.api('GET', '/v1/stats', { key: env.test })).body.totals;
    expect(sums).to.deep.equal([api.sent, api.delivered, api.delivery_delayed, api.bounced, api.complained]);
    expect(rates.id).to.equal('chart-rates');
    expect(rates.desc).to.contain('Reference line: 0.3% limit');
    expect(page.text).to.not.contain('href="/dashboard/delivery"');
    expect((await c.req('GET', '/dashboard/delivery')).status).to.equal(404);
  });

  it('shows a live session live counts, by day over 30 days, and test counts on request', async () => {
    const c = new FormClient(env.s.url);
    expect((await c.signInWith({ key: env.live })).status).to.equal(303);
    const day = await c.req('GET', '/dashboard/overview?range=30d');
    expect(day.text)
      .to.match(/data-stat="sent">3</)
      .and.match(/data-stat="bounced">1</);
    expect(figures(day.text)[0].rows.length).to.be.within(30, 31);
    expect(day.text).to.contain('Emails by status, last 30 days');
    const test = await c.req('GET', '/dashboard/overview?mode=test');
    expect(test.text).to.match(/data-stat="sent">4</);
  });

  it('shows the operator the Delivery page: sites, suspensions, warm-up and per-site charts', async () => {
    const c = new FormClient(env.s.url);
    const team = env.s.db.prepare('SELECT name FROM teams').pluck().get() as string;
    expect((await c.signInWith({ password: PASSWORD, team })).status).to.equal(303);
    const until = Date.now() + 3000; // the loop stores its sites once a second
    while (!(await listSites(env.s.ctx)).some((x) => x.site.includes('rcpt.test')) && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    const site = (await listSites(env.s.ctx)).find((x) => x.site.includes('rcpt.test'))!;
    expect(site, 'site of rcpt.test').to.not.equal(undefined);
    await siteCommand(env.s.ctx, { kind: 'suspend', site: site.site, ip: null, seconds: 600, reason: 'maintenance' });
    const page = await c.req('GET', '/dashboard/delivery');
    expect(page.status).to.equal(200);
    expect(page.text).to.contain('href="/dashboard/delivery"');
    expect(page.text).to.contain(`data-site="${site.site}"`).and.contain('maintenance');
    expect(page.text).to.match(/<table class="stack" id="suspensions">/);
    expect(page.text).to.contain('id="warmups"');
    const charts = figures(page.text);
    const mine = charts.find((f) => f.title?.startsWith(site.site));
    expect(mine, JSON.stringify(charts.map((f) => f.title))).to.not.equal(undefined);
    const total = mine!.rows.reduce((a, r) => [a[0] + +r[0], a[1] + +r[1], a[2] + +r[2]], [0, 0, 0]);
    expect([total[0], total[2]], 'delivered and bounced').to.deep.equal([2, 1]);
  });
});
