import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { startTestService, tempDir, testClock, type TestService } from '../helpers/service.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { Receiver, verify, sleep, type Received } from './webhooks-receiver.js';

const SEND = { from: 'app@example.com', to: 'user@example.org', subject: 'hi', text: 'x' };
const SCOPES = ['emails:send', 'emails:read', 'webhooks:write'] as const;

/** Checks one v1 signature by hand (the library would refuse a timestamp from a moved clock). */
function signedBy(secret: string, r: Received): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const want =
    'v1,' +
    createHmac('sha256', key)
      .update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.${r.body}`)
      .digest('base64');
  return r.headers['webhook-signature'].split(' ').includes(want);
}

describe('webhooks: durability, rotation and disabling', function () {
  this.timeout(20_000);
  let rx: Receiver;
  beforeEach(async () => {
    rx = await new Receiver().start();
  });
  afterEach(() => rx.stop());

  it('loses nothing when the service restarts mid-retry', async () => {
    const dataDir = tempDir();
    const env = { MTA_WEBHOOK_RETRY_MIN_SECONDS: '1' }; // first retry after about 1 s
    let s: TestService = await startTestService({ features: [webhooks], dataDir, env });
    const key = s.key(s.team().id, 'test', [...SCOPES]);
    const ep = (await s.api('POST', '/v1/webhooks', { key, body: { url: rx.url, events: ['queued'] } })).body;
    rx.respond = (n) => (n === 0 ? 503 : 200);
    await s.api('POST', '/v1/emails', { key, body: SEND });
    await rx.waitFor(1);
    await sleep(50);
    await s.close();
    s = await startTestService({ features: [webhooks], dataDir, env });
    try {
      const got = await rx.waitFor(2, 8000);
      expect(got[1].headers['webhook-id']).to.equal(got[0].headers['webhook-id']);
      expect(got[1].body).to.equal(got[0].body);
      verify(ep.secret, got[1]);
      await sleep(100);
      const d = (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body.data;
      expect(d).to.have.length(1);
      expect(d[0]).to.include({ status: 'succeeded', attempt_count: 2 });
      expect(d[0].attempts.map((a: any) => a.status_code)).to.deep.equal([503, 200]);
    } finally {
      await s.close();
    }
  });

  it('sends again a delivery that was in flight at shutdown', async () => {
    const dataDir = tempDir();
    let s: TestService = await startTestService({ features: [webhooks], dataDir });
    const key = s.key(s.team().id, 'test', [...SCOPES]);
    const ep = (await s.api('POST', '/v1/webhooks', { key, body: { url: rx.url, events: ['queued'] } })).body;
    let release!: (n: number) => void;
    rx.respond = (n) =>
      n === 0
        ? new Promise<number>((r) => {
            release = r;
          })
        : 200;
    await s.api('POST', '/v1/emails', { key, body: SEND });
    await rx.waitFor(1);
    await s.close(); // aborts the hanging request and hands its lease back
    release(200);
    s = await startTestService({ features: [webhooks], dataDir });
    try {
      const got = await rx.waitFor(2, 3000);
      expect(got[1].headers['webhook-id']).to.equal(got[0].headers['webhook-id']);
      await sleep(100);
      const d = (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body.data[0];
      expect(d).to.include({ status: 'succeeded', attempt_count: 1 });
    } finally {
      await s.close();
    }
  });

  it('signs with both secrets for 24 h after a rotation, then with the new one only', async () => {
    const clock = testClock();
    const s = await startTestService({ features: [webhooks], now: clock.now });
    try {
      const key = s.key(s.team().id, 'test', [...SCOPES]);
      const ep = (await s.api('POST', '/v1/webhooks', { key, body: { url: rx.url, events: ['queued'] } })).body;
      const rot = await s.api('POST', `/v1/webhooks/${ep.id}/rotate-secret`, { key });
      expect(rot.status).to.equal(200);
      expect(rot.body.secret)
        .to.match(/^whsec_/)
        .and.not.equal(ep.secret);
      expect((await s.api('GET', `/v1/webhooks/${ep.id}`, { key })).body).to.not.have.property('secret');
      await s.api('POST', '/v1/emails', { key, body: SEND });
      const [r1] = await rx.waitFor(1);
      expect(r1.headers['webhook-signature'].split(' ')).to.have.length(2);
      verify(ep.secret, r1);
      verify(rot.body.secret, r1);
      clock.advance(24 * 3600_000 + 60_000);
      await s.api('POST', '/v1/emails', { key, body: SEND });
      const [, r2] = await rx.waitFor(2);
      expect(r2.headers['webhook-signature'].split(' ')).to.have.length(1);
      expect(signedBy(rot.body.secret, r2)).to.equal(true);
      expect(signedBy(ep.secret, r2)).to.equal(false);
    } finally {
      await s.close();
    }
  });

  it('disables an endpoint whose deliveries fail for over 3 days, recording why', async () => {
    const clock = testClock();
    const s = await startTestService({
      features: [webhooks],
      now: clock.now,
      env: { MTA_WEBHOOK_RETRY_MIN_SECONDS: '0.01' },
    });
    try {
      const key = s.key(s.team().id, 'test', [...SCOPES]);
      const ep = (await s.api('POST', '/v1/webhooks', { key, body: { url: rx.url, events: ['queued'] } })).body;
      rx.respond = () => 500;
      await s.api('POST', '/v1/emails', { key, body: SEND });
      await rx.waitFor(2);
      // The second attempt recorded before the clock moves (its record, after the answer, would otherwise see the
      // 3 days pass and disable the endpoint then: PostgreSQL records on the pool, later than the POST).
      const attempts = async () =>
        (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body.data[0]?.attempt_count;
      for (const end = Date.now() + 10_000; (await attempts()) !== 2 && Date.now() < end;) await sleep(20);
      expect(await attempts()).to.equal(2);
      expect((await s.api('GET', `/v1/webhooks/${ep.id}`, { key })).body.enabled).to.equal(true);
      clock.advance(3 * 24 * 3600_000 + 60_000); // the pending retry is now due, and fails once more
      await rx.waitFor(3);
      await sleep(100);
      const g = (await s.api('GET', `/v1/webhooks/${ep.id}`, { key })).body;
      expect(g.enabled).to.equal(false);
      expect(g.disabled_reason).to.match(/3 days/);
      const d = (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body.data[0];
      expect(d.status).to.equal('failed');
      const n = rx.got.length;
      await s.api('POST', '/v1/emails', { key, body: SEND });
      await sleep(200);
      expect(rx.got).to.have.length(n); // a disabled endpoint gets nothing
      const en = await s.api('PATCH', `/v1/webhooks/${ep.id}`, { key, body: { enabled: true } });
      expect(en.body).to.include({ enabled: true, disabled_reason: null });
    } finally {
      await s.close();
    }
  });
});
