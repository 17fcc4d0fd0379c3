// Finding 4 of the audit, walked through the real HTTP API and dashboard: a test key sees and changes
// only test-mode things (Stripe model); live emails, keys and endpoints are 404 to it and stay unchanged.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { feature as domains } from '../../src/features/domains.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { Receiver, sleep } from './webhooks-receiver.js';
import { FormClient as Browserish } from '../helpers/form-client.js';

const ALL = ['emails:send', 'emails:read', 'domains:read', 'domains:write', 'webhooks:write', 'keys:write'] as const;

describe('security: test keys are not a privilege boundary (finding 4)', function () {
  this.timeout(20_000);
  let s: TestService;
  let rxLive: Receiver;
  let rxTest: Receiver;
  let live: string; // live key, every scope
  let test: string; // test key, every scope
  let liveEmail: any;
  let testEmail: any;
  let liveHook: any;
  let liveKeyId: string;

  before(async () => {
    rxLive = await new Receiver().start();
    rxTest = await new Receiver().start();
    s = await startTestService({ features: [webhooks, domains, dashboard], env: { MTA_RATE_LIMIT: '0' } });
    const team = s.team();
    live = s.key(team.id, 'live', [...ALL]);
    test = s.key(team.id, 'test', [...ALL]);
    liveKeyId = s.db.prepare('SELECT id FROM api_keys WHERE prefix = ?').pluck().get(live.slice(0, 12)) as string;
    insertVerifiedDomain(s.db, team.id, 'shop.test');
    s.credits(team.id, 10);
    liveHook = (
      await s.api('POST', '/v1/webhooks', { key: live, body: { url: rxLive.url, events: ['queued', 'canceled'] } })
    ).body;
    const testHook = await s.api('POST', '/v1/webhooks', {
      key: test,
      body: { url: rxTest.url, events: ['queued', 'canceled'] },
    });
    expect(testHook.status).to.equal(201);
    expect(liveHook.mode).to.equal('live');
    expect(testHook.body.mode).to.equal('test');
    liveEmail = (
      await s.api('POST', '/v1/emails', {
        key: live,
        body: { from: 'a@shop.test', to: 'ann@rcpt.test', subject: 'live one', text: 't' },
      })
    ).body;
    testEmail = (
      await s.api('POST', '/v1/emails', {
        key: test,
        body: { from: 'a@shop.test', to: 'delivered@rcpt.test', subject: 'test one', text: 't' },
      })
    ).body;
    expect([liveEmail.status, testEmail.test_mode]).to.deep.equal(['queued', true]);
  });
  after(async () => {
    await s.close();
    await rxLive.stop();
    await rxTest.stop();
  });

  it('lists only test emails, whatever the test_mode filter', async () => {
    for (const q of ['', '?test_mode=false', '?test_mode=true', '?q=live']) {
      const ids = (await s.api('GET', `/v1/emails${q}`, { key: test })).body.data.map((e: any) => e.id);
      expect(ids, q).to.not.include(liveEmail.id);
      if (q === '' || q === '?test_mode=true') expect(ids, q).to.deep.equal([testEmail.id]);
    }
    const both = (await s.api('GET', '/v1/emails', { key: live })).body.data.map((e: any) => e.id);
    expect(both).to.have.members([liveEmail.id, testEmail.id]);
  });

  it('answers 404 email_not_found for a live email: fetch, events, cancel; the email stays queued', async () => {
    for (const [m, p] of [
      ['GET', ''],
      ['GET', '/events'],
      ['POST', '/cancel'],
    ]) {
      const r = await s.api(m, `/v1/emails/${liveEmail.id}${p}`, { key: test });
      expect(r.status, `${m} ${p}`).to.equal(404);
      expect(r.body.error.code).to.equal('email_not_found');
    }
    expect((await s.api('GET', `/v1/emails/${liveEmail.id}`, { key: live })).body.status).to.equal('queued');
    expect((await s.api('GET', `/v1/emails/${testEmail.id}/events`, { key: test })).status).to.equal(200);
  });

  it('lists only test keys and cannot revoke a live key (404); the live key keeps working', async () => {
    const keys = (await s.api('GET', '/v1/api-keys', { key: test })).body.data;
    expect(keys.map((k: any) => k.mode)).to.deep.equal(['test']);
    const r = await s.api('DELETE', `/v1/api-keys/${liveKeyId}`, { key: test });
    expect(r.status).to.equal(404);
    expect(r.body.error.code).to.equal('api_key_not_found');
    expect((await s.api('GET', '/v1/credits', { key: live })).status).to.equal(200);
    expect((await s.api('GET', '/v1/api-keys', { key: live })).body.data.map((k: any) => k.mode)).to.have.members([
      'live',
      'test',
    ]);
  });

  it('cannot see, re-point, rotate, replay or delete a live endpoint (404); it is unchanged', async () => {
    const list = (await s.api('GET', '/v1/webhooks', { key: test })).body.data;
    expect(list.map((e: any) => e.mode)).to.deep.equal(['test']);
    const calls: [string, string, unknown?][] = [
      ['GET', ''],
      ['PATCH', '', { url: 'http://127.0.0.1:9/evil' }],
      ['POST', '/rotate-secret'],
      ['GET', '/deliveries'],
      ['POST', '/deliveries/whd_x/retry'],
      ['DELETE', ''],
    ];
    for (const [m, p, body] of calls) {
      const r = await s.api(m, `/v1/webhooks/${liveHook.id}${p}`, { key: test, body });
      expect(r.status, `${m} ${p}`).to.equal(404);
      expect(r.body.error.code, `${m} ${p}`).to.equal('webhook_not_found');
    }
    const row = s.db
      .prepare('SELECT url, secret, old_secret FROM webhook_endpoints WHERE id = ?')
      .get(liveHook.id) as any;
    expect(row).to.deep.equal({ url: rxLive.url, secret: liveHook.secret, old_secret: null });
  });

  it("sends each email's events only to endpoints of its mode", async () => {
    await rxLive.waitFor(1);
    await rxTest.waitFor(1);
    await sleep(200);
    expect(rxLive.got.map((r) => r.json.data.email.id)).to.deep.equal([liveEmail.id]);
    expect(rxTest.got.map((r) => r.json.data.email.id)).to.deep.equal([testEmail.id]);
  });

  it('reads domains, credits and suppressions, but cannot add, verify, rotate or delete a domain (403 test_key_not_allowed)', async () => {
    const d = (await s.api('POST', '/v1/domains', { key: live, body: { name: 'news.shop.test' } })).body;
    expect((await s.api('GET', '/v1/domains', { key: test })).body.data.map((x: any) => x.id)).to.include(d.id);
    expect((await s.api('GET', `/v1/domains/${d.id}`, { key: test })).status).to.equal(200);
    for (const p of ['/v1/credits', '/v1/suppressions'])
      expect((await s.api('GET', p, { key: test })).status, p).to.equal(200);
    const before = s.db.prepare('SELECT * FROM domains WHERE id = ?').get(d.id);
    for (const [m, p, body] of [
      ['POST', '/v1/domains', { name: 'evil.test' }],
      ['POST', `/v1/domains/${d.id}/verify`],
      ['POST', `/v1/domains/${d.id}/rotate-dkim`],
      ['DELETE', `/v1/domains/${d.id}`],
    ] as const) {
      const r = await s.api(m, p, { key: test, body });
      expect(r.status, `${m} ${p}`).to.equal(403);
      expect(r.body.error.code).to.equal('test_key_not_allowed');
      expect(r.body.error.doc_url).to.match(/\/errors#test_key_not_allowed$/);
    }
    expect(s.db.prepare('SELECT * FROM domains WHERE id = ?').get(d.id)).to.deep.equal(before);
    expect(s.db.prepare("SELECT count(*) FROM domains WHERE name = 'evil.test'").pluck().get()).to.equal(0);
    const docs = await fetch(`${s.url}/docs/errors`).then((r) => r.text());
    expect(docs).to.contain('id="test_key_not_allowed"');
  });

  it('reads the suppression list but cannot add or remove an entry (403 test_key_not_allowed); the list is unchanged', async () => {
    expect(
      (await s.api('POST', '/v1/suppressions', { key: live, body: { address: 'kept@rcpt.test' } })).status,
    ).to.equal(201);
    const add = await s.api('POST', '/v1/suppressions', { key: test, body: { address: 'blocked@rcpt.test' } });
    expect(add.status).to.equal(403);
    expect(add.body.error.code).to.equal('test_key_not_allowed');
    const del = await s.api('DELETE', '/v1/suppressions/kept@rcpt.test', { key: test });
    expect(del.status).to.equal(403);
    const list = (await s.api('GET', '/v1/suppressions', { key: test })).body.data.map(
      (x: { address: string }) => x.address,
    );
    expect(list).to.include('kept@rcpt.test').and.not.include('blocked@rcpt.test');
  });

  it('the dashboard signed in with a test key shows and changes only the same things', async () => {
    const b = new Browserish(s.url);
    expect((await b.signIn(test)).status).to.equal(303);
    const emails = await b.req('GET', '/dashboard/emails?test_mode=false');
    expect(emails.text).to.not.contain('live one');
    expect((await b.req('GET', '/dashboard/emails')).text)
      .to.contain('test one')
      .and.not.contain('live one');
    expect((await b.req('GET', `/dashboard/emails/${liveEmail.id}`)).status).to.equal(404);
    expect((await b.req('GET', `/dashboard/emails/${liveEmail.id}/timeline`)).status).to.equal(404);
    expect(
      JSON.parse((await b.req('GET', `/dashboard/emails/statuses?ids=${liveEmail.id},${testEmail.id}`)).text),
    ).to.have.keys([testEmail.id]);
    const keysPage = await b.req('GET', '/dashboard/keys');
    expect(keysPage.text).to.contain(test.slice(0, 12)).and.not.contain(live.slice(0, 12));
    expect(keysPage.text).to.not.contain('value="live"');
    const csrf = b.csrf(keysPage.text);
    expect((await b.req('POST', `/dashboard/emails/${liveEmail.id}/cancel`, { _csrf: csrf })).status).to.equal(404);
    expect((await b.req('POST', `/dashboard/keys/${liveKeyId}/revoke`, { _csrf: csrf })).status).to.equal(404);
    expect(
      (await b.req('POST', '/dashboard/keys', { _csrf: csrf, mode: 'live', scopes: 'emails:read' })).status,
    ).to.equal(403);
    expect((await b.req('GET', '/dashboard/webhooks')).text)
      .to.contain(rxTest.url)
      .and.not.contain(rxLive.url);
    const d = (await s.api('GET', '/v1/domains', { key: live })).body.data[0];
    const domainPage = await b.req('GET', `/dashboard/domains/${d.id}`);
    expect(domainPage.status).to.equal(200);
    expect(domainPage.text).to.contain('test key').and.not.contain('Check records now');
    expect((await b.req('POST', `/dashboard/domains/${d.id}/verify`, { _csrf: csrf })).status).to.equal(403);
    expect((await b.req('POST', '/dashboard/domains', { _csrf: csrf, name: 'evil2.test' })).status).to.equal(403);
    expect(s.db.prepare("SELECT count(*) FROM domains WHERE name = 'evil2.test'").pluck().get()).to.equal(0);
    expect((await s.api('GET', `/v1/emails/${liveEmail.id}`, { key: live })).body.status).to.equal('queued');
    expect((await s.api('GET', '/v1/credits', { key: live })).status).to.equal(200); // the live key was not revoked
  });
});
