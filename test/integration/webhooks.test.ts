import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { Receiver, verify, sleep } from './webhooks-receiver.js';

const SEND = { from: 'app@example.com', to: 'user@example.org', subject: 'hi', text: 'x' };

describe('webhooks: endpoints API', () => {
  let s: TestService;
  let key: string;
  before(async () => {
    s = await startTestService({ features: [webhooks] });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
  });
  after(() => s.close());

  it('creates (secret shown once), lists, gets, updates and deletes an endpoint', async () => {
    const c = await s.api('POST', '/v1/webhooks', {
      key,
      body: { url: 'http://127.0.0.1:9/hook', events: ['delivered', 'bounced', 'delivered'] },
    });
    expect(c.status, JSON.stringify(c.body)).to.equal(201);
    expect(c.body).to.include({ object: 'webhook_endpoint', url: 'http://127.0.0.1:9/hook', enabled: true });
    expect(c.body.id).to.match(/^wh_[0-9a-z]{26}$/);
    expect(c.body.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(c.body.events).to.deep.equal(['delivered', 'bounced']);
    const g = await s.api('GET', `/v1/webhooks/${c.body.id}`, { key });
    expect(g.status).to.equal(200);
    expect(g.body).to.not.have.property('secret');
    expect(JSON.stringify(g.body)).to.not.include(c.body.secret.slice(6));
    const l = await s.api('GET', '/v1/webhooks', { key });
    expect(l.body.object).to.equal('list');
    expect(l.body.data.map((e: any) => e.id)).to.include(c.body.id);
    expect(JSON.stringify(l.body)).to.not.include('whsec_');
    const p = await s.api('PATCH', `/v1/webhooks/${c.body.id}`, { key, body: { events: ['opened'], enabled: false } });
    expect(p.status, JSON.stringify(p.body)).to.equal(200);
    expect(p.body).to.include({ enabled: false, url: 'http://127.0.0.1:9/hook' });
    expect(p.body.events).to.deep.equal(['opened']);
    const d = await s.api('DELETE', `/v1/webhooks/${c.body.id}`, { key });
    expect(d.status).to.equal(200);
    expect((await s.api('GET', `/v1/webhooks/${c.body.id}`, { key })).body.error.code).to.equal('webhook_not_found');
  });

  it('refuses bad events and urls with 422 naming the field', async () => {
    const bad = [
      [{ url: 'http://127.0.0.1:9/', events: ['nope'] }, 'events'],
      [{ url: 'http://127.0.0.1:9/', events: [] }, 'events'],
      [{ url: 'not a url', events: ['delivered'] }, 'url'],
      [{ url: 'ftp://127.0.0.1/', events: ['delivered'] }, 'url'],
      [{ url: 'https://user:pw@127.0.0.1/', events: ['delivered'] }, 'url'],
      [{ events: ['delivered'] }, 'url'],
    ] as const;
    for (const [body, param] of bad) {
      const r = await s.api('POST', '/v1/webhooks', { key, body });
      expect(r.status, JSON.stringify(body)).to.equal(422);
      expect(r.body.error).to.include({ code: 'invalid_parameter', param });
    }
    const c = await s.api('POST', '/v1/webhooks', { key, body: { url: 'http://127.0.0.1:9/', events: ['sent'] } });
    const p = await s.api('PATCH', `/v1/webhooks/${c.body.id}`, { key, body: { url: 'gopher://x' } });
    expect(p.status).to.equal(422);
    expect(p.body.error.param).to.equal('url');
  });

  it('needs the webhooks:write scope', async () => {
    const plain = s.key(s.team().id);
    const r = await s.api('GET', '/v1/webhooks', { key: plain });
    expect(r.status).to.equal(403);
    expect(r.body.error.code).to.equal('missing_scope');
  });
});

describe('webhooks: delivery', function () {
  this.timeout(20_000);
  let s: TestService;
  let rx: Receiver;
  let key: string;
  const hook = async (events: string[], url = rx.url, k = key) => {
    const r = await s.api('POST', '/v1/webhooks', { key: k, body: { url, events } });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    return r.body as { id: string; secret: string };
  };
  const send = async (k = key) => (await s.api('POST', '/v1/emails', { key: k, body: SEND })).body;

  beforeEach(async () => {
    s = await startTestService({ features: [webhooks], env: { MTA_WEBHOOK_RETRY_MIN_SECONDS: '0.01' } });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
    rx = await new Receiver().start();
  });
  afterEach(async () => {
    await s.close();
    await rx.stop();
  });

  it('POSTs a signed event a Standard Webhooks library verifies, promptly, with the decided payload', async () => {
    const ep = await hook(['queued', 'canceled']);
    const t0 = Date.now();
    const email = await send();
    const [first] = await rx.waitFor(1);
    expect(first.at - t0).to.be.below(500);
    const payload = verify(ep.secret, first);
    const events = (await s.api('GET', `/v1/emails/${email.id}/events`, { key })).body.data;
    expect(payload).to.deep.equal({
      id: events[0].id,
      object: 'event',
      type: 'queued',
      created_at: events[0].created_at,
      data: { email, recipient: null, details: {} },
    });
    expect(first.headers['webhook-id']).to.equal(events[0].id);
    await s.api('POST', `/v1/emails/${email.id}/cancel`, { key });
    const [, second] = await rx.waitFor(2);
    const p2 = verify(ep.secret, second);
    expect(p2.type).to.equal('canceled');
    expect(p2.data.email.status).to.equal('canceled');
    expect(() => verify('whsec_' + Buffer.alloc(32).toString('base64'), second)).to.throw();
  });

  it('sends only the subscribed kinds', async () => {
    await hook(['canceled']);
    const email = await send();
    await sleep(200);
    expect(rx.got).to.have.length(0);
    await s.api('POST', `/v1/emails/${email.id}/cancel`, { key });
    const [r] = await rx.waitFor(1);
    expect(r.json.type).to.equal('canceled');
  });

  it('retries after 5xx with the same webhook-id until a 2xx, and logs every attempt', async () => {
    const ep = await hook(['queued']);
    rx.respond = (n) => (n < 2 ? 500 : 204);
    await send();
    const got = await rx.waitFor(3, 10_000);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).to.equal(1);
    for (const r of got) verify(ep.secret, r);
    expect(got[1].at - got[0].at).to.be.at.least(8); // about 5 s × 0.01/5
    expect(got[2].at - got[1].at).to.be.at.least(500); // about 5 min × 0.01/5
    await sleep(100);
    const log = (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body;
    expect(log.data).to.have.length(1);
    const d = log.data[0];
    expect(d).to.include({
      object: 'webhook_delivery',
      status: 'succeeded',
      attempt_count: 3,
      event_type: 'queued',
      next_attempt_at: null,
    });
    expect(d.attempts.map((a: any) => [a.attempt, a.status_code])).to.deep.equal([
      [1, 500],
      [2, 500],
      [3, 204],
    ]);
    expect(d.attempts[0].response_snippet).to.equal('answer 500');
    expect(d.attempts[0].next_retry_at).to.be.a('string');
    expect(d.attempts[2].next_retry_at).to.equal(null);
    expect(d.attempts[0].duration_ms).to.be.a('number');
    expect(rx.got).to.have.length(3);
  });

  it('does not retry after a 400, and a replay sends the same event again', async () => {
    const ep = await hook(['queued']);
    rx.respond = (n) => (n === 0 ? 400 : 200);
    await send();
    await rx.waitFor(1);
    await sleep(400);
    expect(rx.got).to.have.length(1);
    const d = (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body.data[0];
    expect(d).to.include({ status: 'failed', attempt_count: 1, last_status_code: 400 });
    const rr = await s.api('POST', `/v1/webhooks/${ep.id}/deliveries/${d.id}/retry`, { key });
    expect(rr.status, JSON.stringify(rr.body)).to.equal(202);
    expect(rr.body).to.include({ event_id: d.event_id, status: 'pending' });
    const [, again] = await rx.waitFor(2);
    expect(again.headers['webhook-id']).to.equal(d.event_id);
    expect(again.body).to.equal(rx.got[0].body);
    expect((await s.api('POST', `/v1/webhooks/${ep.id}/deliveries/whd_nope/retry`, { key })).status).to.equal(404);
  });

  it('retries on connection errors', async () => {
    const ep = await hook(['queued'], 'http://127.0.0.1:1/refused');
    await send();
    await sleep(300);
    const d = (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body.data[0];
    expect(d.attempt_count).to.be.at.least(1);
    expect(d.status).to.equal('pending');
    expect(d.attempts[0].error).to.match(/ECONNREFUSED/);
    expect(d.attempts[0].status_code).to.equal(null);
  });

  it('keeps teams apart: no foreign events, and foreign endpoints are 404', async () => {
    const keyB = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
    const rxB = await new Receiver().start();
    try {
      const a = await hook(['queued']);
      await hook(['queued'], rxB.url, keyB);
      await send(key);
      await rx.waitFor(1);
      await sleep(200);
      expect(rxB.got).to.have.length(0);
      for (const [m, p, body] of [
        ['GET', `/v1/webhooks/${a.id}`],
        ['PATCH', `/v1/webhooks/${a.id}`, { enabled: false }],
        ['DELETE', `/v1/webhooks/${a.id}`],
        ['POST', `/v1/webhooks/${a.id}/rotate-secret`],
        ['GET', `/v1/webhooks/${a.id}/deliveries`],
      ] as const) {
        const r = await s.api(m, p, { key: keyB, body });
        expect(r.status, `${m} ${p}`).to.equal(404);
        expect(r.body.error.code).to.equal('webhook_not_found');
      }
      const listB = (await s.api('GET', '/v1/webhooks', { key: keyB })).body.data;
      expect(listB.map((e: any) => e.id)).to.not.include(a.id);
      expect((await s.api('GET', `/v1/webhooks/${a.id}`, { key })).body.enabled).to.equal(true);
    } finally {
      await rxB.stop();
    }
  });
});
