// GET /v1/stats through the real API, delivery loop and a loopback MX (live) and the test-mode simulation:
// the counters' sums match the emails sent, each key sees its own mode, per-site counters, validation, plans.
import { expect } from 'chai';
import { outboundEnv, unknownAndSlow, sleep, type OutboundEnv } from './outbound-env.js';
import { preparedTexts } from '../../src/store/db.js';
import { siteSeries } from '../../src/services/stats.js';
import { testEngine } from '../helpers/service.js';

const TYPES = ['sent', 'delivered', 'delivery_delayed', 'bounced', 'complained', 'failed', 'canceled'];

describe('GET /v1/stats', function () {
  this.timeout(30_000);
  let env: OutboundEnv;
  const live: string[] = [];
  const test: string[] = [];

  before(async () => {
    env = await outboundEnv({
      script: unknownAndSlow(),
    });
    for (let i = 0; i < 4; i++) live.push((await env.send({ to: `ok${i}@rcpt.test` })).id);
    for (let i = 0; i < 2; i++) live.push((await env.send({ to: `unknown${i}@rcpt.test` })).id);
    live.push((await env.send({ to: 'slow@rcpt.test' })).id);
    for (const to of ['delivered', 'bounced', 'complained', 'delayed'])
      test.push((await env.send({ to: `${to}@example.test` }, env.test)).id);
    for (const id of live) await env.waitStatus(id, ['delivered', 'bounced'], 10_000);
    for (const id of test) await env.waitStatus(id, ['delivered', 'bounced', 'complained'], 10_000, env.test);
  });
  after(() => env?.close());

  const stats = (q: string, key = env.live) => env.s.api('GET', `/v1/stats${q}`, { key });

  it('counts the live emails sent, by the status they reached; the sums match the emails', async () => {
    const r = await stats('');
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.include({ object: 'stats', granularity: 'hour', test_mode: false });
    expect(r.body.data).to.have.length.within(24, 25);
    const t = r.body.totals;
    expect(t).to.include({ sent: 7, delivered: 5, bounced: 2, complained: 0, failed: 0 });
    // A busy machine may defer more than the scripted one: count the emails whose events say so.
    const events = await Promise.all(live.map((id) => env.events(id)));
    const delayed = events.filter((evs) => evs.some((e: any) => e.type === 'delivery_delayed')).length;
    expect(delayed).to.be.at.least(1);
    expect(t.delivery_delayed).to.equal(delayed);
    expect(t.bounce_rate).to.be.closeTo(2 / 7, 1e-6);
    expect(t.complaint_rate).to.equal(0);
    for (const type of TYPES) {
      const sum = r.body.data.reduce((a: number, b: any) => a + b[type], 0);
      expect(sum, type).to.equal(t[type]);
    }
    // Every email is counted once under the status it ended in.
    for (const status of ['delivered', 'bounced']) {
      const list = await env.s.api('GET', `/v1/emails?status=${status}&test_mode=false&limit=100`, { key: env.live });
      expect(list.body.data.length, status).to.equal(t[status]);
    }
    expect(t.sent).to.equal(live.length);
  });

  it('a test key sees the simulated test emails only; a live key asks with test_mode=true', async () => {
    const r = await stats('', env.test);
    expect(r.status).to.equal(200);
    expect(r.body.test_mode).to.equal(true);
    expect(r.body.totals).to.include({ sent: 4, delivered: 3, bounced: 1, complained: 1, delivery_delayed: 1 });
    expect(r.body.totals.complaint_rate).to.be.closeTo(1 / 3, 1e-6);
    const viaLive = await stats('?test_mode=true');
    expect(viaLive.body.totals).to.deep.equal(r.body.totals);
    const none = await stats('?test_mode=false', env.test);
    expect(none.body.totals.sent).to.equal(0);
  });

  it('buckets by UTC day; the current bucket holds everything', async () => {
    const from = new Date(Date.now() - 3 * 86_400_000).toISOString();
    const r = await stats(`?granularity=day&from=${encodeURIComponent(from)}`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.data).to.have.length(4);
    for (const b of r.body.data) expect(b.start).to.match(/T00:00:00\.000Z$/);
    expect(r.body.data[3]).to.include({ sent: 7, delivered: 5, bounced: 2 });
    const past = await stats('?from=2020-01-01&to=2020-01-02&granularity=hour');
    expect(past.body.data).to.have.length(24);
    expect(past.body.totals.sent).to.equal(0);
  });

  it('refuses bad parameters with 422 naming the parameter', async () => {
    const cases: [string, string][] = [
      ['?granularity=week', 'granularity'],
      ['?from=yesterday', 'from'],
      ['?to=2026-13-45T99:00:00', 'to'],
      ['?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', 'from'],
      ['?from=2025-01-01&to=2025-06-01', 'to'],
      ['?foo=1', 'foo'],
    ];
    for (const [q, param] of cases) {
      const r = await stats(q);
      expect(r.status, q).to.equal(422);
      expect(r.body.error, q).to.include({ code: 'invalid_parameter', param });
    }
    expect((await env.s.api('GET', '/v1/stats')).status).to.equal(401);
  });

  it("counts each site's delivery outcomes for the Delivery page", async () => {
    await sleep(50);
    const sites = await siteSeries(env.s.ctx);
    const site = sites.find((s) => s.site.includes('rcpt.test'));
    expect(site, JSON.stringify(sites)).to.not.equal(undefined);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(site!.hours).to.have.length(24);
    const events = (await Promise.all(live.map((id) => env.events(id)))).flat();
    const deferrals = events.filter((e: any) => e.type === 'delivery_delayed' && e.data.source === 'smtp').length;
    expect({
      delivered: sum(site!.delivered),
      deferred: sum(site!.deferred),
      bounced: sum(site!.bounced),
    }).to.deep.equal({ delivered: 5, deferred: deferrals, bounced: 2 });
  });

  it('reads and writes the counters by key, never scanning a table', function () {
    if (testEngine() === 'pg') this.skip(); // EXPLAIN QUERY PLAN is SQLite's
    const texts = preparedTexts(env.s.db).filter((t) => /stats_hourly|site_hourly/.test(t));
    expect(texts.length).to.be.at.least(4);
    for (const text of texts) {
      const n = (text.match(/\?/g) ?? []).length;
      const plan = env.s.db
        .prepare(`EXPLAIN QUERY PLAN ${text}`)
        .all(...new Array(n).fill(null))
        .map((r: any) => r.detail as string);
      for (const line of plan) expect(line, text).to.not.match(/^SCAN (stats_hourly|site_hourly)\b/);
    }
  });
});
