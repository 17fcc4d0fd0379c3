import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { Receiver, verify } from './webhooks-receiver.js';

// The full service (every feature): test-mode emails walk their statuses by simulation and each
// status change reaches the endpoint, signed, in order of the email's events.
describe('webhooks: end to end with every feature', function () {
  this.timeout(20_000);
  let s: TestService;
  let rx: Receiver;
  before(async () => {
    s = await startTestService();
    rx = await new Receiver().start();
  });
  after(async () => {
    await s.close();
    await rx.stop();
  });

  it('delivers queued, sent and delivered for a test email, each verified and matching the events', async () => {
    const key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
    const ep = (
      await s.api('POST', '/v1/webhooks', {
        key,
        body: { url: rx.url, events: ['queued', 'sent', 'delivered', 'bounced'] },
      })
    ).body;
    const email = (
      await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'a@example.com', to: 'delivered@example.org', subject: 's', text: 't' },
      })
    ).body;
    const got = await rx.waitFor(3, 8000);
    const payloads = got.map((r) => verify(ep.secret, r)); // each also checked against the document's webhooks
    const events = (await s.api('GET', `/v1/emails/${email.id}/events`, { key })).body.data;
    const byId = new Map(events.map((e: any) => [e.id, e]));
    expect(payloads.map((p) => p.type).sort()).to.deep.equal(['delivered', 'queued', 'sent']);
    for (const p of payloads) {
      expect(byId.get(p.id), p.type).to.include({ type: p.type });
      expect(p.data.email.id).to.equal(email.id);
    }
    expect(payloads.find((p) => p.type === 'delivered').data.email.status).to.equal('delivered');
    expect(payloads.find((p) => p.type === 'queued').data.email.status).to.equal('queued');
  });

  it('a bounce reaches the endpoint with its data (reason, hard, SMTP reply) as the document describes it', async () => {
    const key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
    const rx3 = await new Receiver().start();
    try {
      const ep = (await s.api('POST', '/v1/webhooks', { key, body: { url: rx3.url, events: ['bounced'] } })).body;
      const body = { from: 'a@example.com', to: 'bounced@example.org', subject: 'b', text: 't' };
      await s.api('POST', '/v1/emails', { key, body });
      const [got] = await rx3.waitFor(1, 8000);
      const p = verify(ep.secret, got); // checked against the document's `webhooks` too
      expect(p.type).to.equal('bounced');
      expect(p.data.details).to.include({ reason: 'userunknown', hard: true, smtp_code: 550, source: 'simulated' });
    } finally {
      await rx3.stop();
    }
  });

  it('reuses connections to an endpoint (keep-alive) across deliveries', async () => {
    const key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
    const rx2 = await new Receiver().start();
    try {
      await s.api('POST', '/v1/webhooks', { key, body: { url: rx2.url, events: ['queued', 'sent', 'delivered'] } });
      for (let i = 0; i < 4; i++) {
        await s.api('POST', '/v1/emails', {
          key,
          body: { from: 'a@example.com', to: 'delivered@example.org', subject: `s${i}`, text: 't' },
        });
        await rx2.waitFor(3 * (i + 1), 8000);
      }
      expect(rx2.got).to.have.length(12);
      expect(rx2.connections).to.be.lessThan(6);
    } finally {
      await rx2.stop();
    }
  });
});
