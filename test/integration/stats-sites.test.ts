// GET /v1/stats/sites through the real API, delivery loop, loopback DNS and a scripted MX behind two sites
// (one named by the shaping rules, one by its MX host), the Overview's table; and every status change counted by
// GET /v1/stats whichever path made it (an operator's purge, a cancel, a late asynchronous bounce).
import { expect } from 'chai';
import { outboundEnv, unknownAndSlow, route, type OutboundEnv } from './outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as operations } from '../../src/features/operations.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { applyOutcomesPlan } from '../../src/services/transition.js';
import { tx } from '../../src/store/db.js';
import { runSync } from '../../src/store/op.js';
import { FormClient } from '../helpers/form-client.js';

const TOKEN = 'admin-token-for-tests-0123456789';
const PASSWORD = 'correct horse battery staple';

describe('GET /v1/stats/sites', function () {
  this.timeout(40_000);
  let env: OutboundEnv;
  const alpha: string[] = [];
  const other: string[] = [];

  before(async () => {
    env = await outboundEnv({
      features: [outbound, operations, dashboard],
      env: { MTA_ADMIN_TOKEN: TOKEN, MTA_DASHBOARD_PASSWORD: PASSWORD },
      shaping: { sites: { alpha: { mx: ['mx.rcpt.test'] } } },
      script: unknownAndSlow(),
    });
    route(env.dns, 'hold.test');
    for (const to of ['ok0', 'ok1', 'ok2', 'ok3', 'unknown0', 'slow0'])
      alpha.push((await env.send({ to: `${to}@rcpt.test` })).id);
    for (const to of ['ok0', 'unknown0', 'unknown1']) other.push((await env.send({ to: `${to}@other.test` })).id);
    for (const to of ['delivered', 'bounced']) await env.send({ to: `${to}@example.test` }, env.test);
    for (const id of [...alpha, ...other]) await env.waitStatus(id, ['delivered', 'bounced'], 15_000);
  });
  after(() => env?.close());

  const sites = (q = '', key = env.live) => env.s.api('GET', `/v1/stats/sites${q}`, { key });
  const stats = (q = '', key = env.live) => env.s.api('GET', `/v1/stats${q}`, { key });
  const admin = (p: string, body?: unknown) =>
    env.s.api('POST', `/admin/v1${p}`, { body, headers: { authorization: `Bearer ${TOKEN}` } });

  it('answers each site with its figures, by sent, largest first, with rates and a median delivery time', async () => {
    const r = await sites();
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.object).to.equal('list');
    expect(r.body.data.map((s: any) => s.site)).to.deep.equal(['alpha', 'mx.other.test']);
    const [a, o] = r.body.data;
    // A busy machine may defer more than the scripted one: count the recipients whose events say so.
    const events = await Promise.all(alpha.map((id) => env.events(id)));
    const delayed = events.filter((evs) => evs.some((e: any) => e.type === 'delivery_delayed')).length;
    const deferrals = events.flat().filter((e: any) => e.type === 'delivery_delayed').length;
    expect(delayed).to.be.at.least(1);
    expect(a).to.include({ object: 'site_stats', sent: 6, delivered: 5, bounced: 1, complained: 0 });
    expect(a).to.include({ delivery_delayed: delayed, deferrals });
    expect(a.bounce_rate).to.be.closeTo(1 / 6, 1e-6);
    expect(a.complaint_rate).to.equal(0);
    expect(a.deferral_rate).to.be.closeTo(deferrals / (deferrals + 6), 1e-6);
    expect(a.median_delivery_seconds).to.be.a('number').within(0, 15);
    expect(o).to.include({ object: 'site_stats', sent: 3, delivered: 1, bounced: 2, deferrals: 0, deferral_rate: 0 });
    expect(o.bounce_rate).to.be.closeTo(2 / 3, 1e-6);
    expect(o.median_delivery_seconds).to.be.a('number').within(0, 15);
  });

  it('counts a complaint and a late bounce at the site of the recipient, and in GET /v1/stats', async () => {
    const seqOf = (id: string) => env.s.db.prepare('SELECT seq FROM emails WHERE id = ?').pluck().get(id) as number;
    const rcptOf = (seq: number) =>
      env.s.db.prepare('SELECT id FROM deliveries WHERE email_seq = ?').pluck().get(seq) as number;
    const before = (await stats()).body.totals;
    const complained = seqOf(alpha[0]);
    const bounced = seqOf(other[0]);
    tx(env.s.db, () => {
      runSync(
        applyOutcomesPlan(env.s.ctx, complained, [
          { deliveryId: rcptOf(complained), event: 'complaint', data: { source: 'feedback' } },
        ]),
      );
      runSync(
        applyOutcomesPlan(env.s.ctx, bounced, [
          { deliveryId: rcptOf(bounced), event: 'async_bounce', data: { smtp_code: 550, hard: true } },
        ]),
      );
    });
    const after = (await stats()).body.totals;
    expect(after.complained - before.complained).to.equal(1);
    expect(after.bounced - before.bounced, 'a late bounce after delivered counts bounced').to.equal(1);
    const [a, o] = (await sites()).body.data;
    expect(a).to.include({ site: 'alpha', complained: 1 });
    expect(a.complaint_rate).to.be.closeTo(1 / 5, 1e-6);
    expect(o).to.include({ site: 'mx.other.test', bounced: 3 });
  });

  it('a test key sees the test figures only; a live key the live ones; windows filter by hour', async () => {
    const t = await sites('', env.test);
    expect(t.status).to.equal(200);
    expect(t.body.data).to.have.length(1);
    expect(t.body.data[0]).to.include({ site: 'simulated', sent: 2, delivered: 1, bounced: 1 });
    expect((await sites('?test_mode=true')).body.data).to.deep.equal(t.body.data);
    expect((await sites('?test_mode=false', env.test)).body.data).to.deep.equal([]);
    expect((await sites('?from=2020-01-01&to=2020-01-02')).body.data).to.deep.equal([]);
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
    const inHour = await sites(`?from=${encodeURIComponent(hour.toISOString())}`);
    expect(inHour.body.data.map((s: any) => s.site)).to.deep.equal(['alpha', 'mx.other.test']);
    const bad = await sites('?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z');
    expect(bad.status).to.equal(422);
    expect(bad.body.error).to.include({ code: 'invalid_parameter', param: 'from' });
    expect((await env.s.api('GET', '/v1/stats/sites')).status).to.equal(401);
  });

  it('shows the sites on the Overview as a table with the 0.3% complaint line', async () => {
    const c = new FormClient(env.s.url);
    expect((await c.signInWith({ key: env.live })).status).to.equal(303);
    const page = await c.req('GET', '/dashboard/overview');
    expect(page.status).to.equal(200);
    const table = /<table[^>]*id="site-stats"[\s\S]*?<\/table>/.exec(page.text)?.[0] ?? '';
    const rows = [...table.matchAll(/<tr data-site="([^"]+)">([\s\S]*?)<\/tr>/g)].map((m) => ({
      site: m[1],
      over: m[2].includes('above the 0.3% limit'),
    }));
    expect(rows).to.deep.equal([
      { site: 'alpha', over: true }, // 1 complaint per 5 delivered
      { site: 'mx.other.test', over: false },
    ]);
    expect(table).to.contain('0.3%');
  });

  it('counts the emails an operator purges as failed, and a canceled email as canceled', async () => {
    const before = (await stats()).body.totals;
    const at = new Date(Date.now() + 3600e3).toISOString();
    for (let i = 0; i < 10; i++) await env.send({ to: `p${i}@hold.test`, scheduled_at: at });
    const r = await admin('/queue/purge', { domain: 'hold.test' });
    expect(r.status, JSON.stringify(r.body)).to.be.oneOf([200, 202]);
    const list = await env.s.api('GET', '/v1/emails?status=failed&limit=100', { key: env.live });
    expect(list.body.data.length).to.equal(10);
    const mid = (await stats()).body.totals;
    expect(mid.failed - before.failed, '10 purged emails counted failed').to.equal(10);
    const c = await env.send({ to: 'c@hold.test', scheduled_at: at });
    expect((await env.s.api('POST', `/v1/emails/${c.id}/cancel`, { key: env.live })).status).to.equal(200);
    const after = (await stats()).body.totals;
    expect(after.canceled - mid.canceled).to.equal(1);
  });
});
