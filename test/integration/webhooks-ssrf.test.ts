import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { isBlockedIp } from '../../src/webhooks/ssrf.js';
import { postWebhook } from '../../src/webhooks/post.js';
import { Receiver, sleep } from './webhooks-receiver.js';

describe('webhooks: SSRF guard', function () {
  this.timeout(15_000);
  let s: TestService;
  let dns: TestDns;
  let key: string;
  before(async () => {
    dns = await new TestDns().start();
    s = await startTestService({ features: [webhooks], env: { MTA_ALLOW_PRIVATE_WEBHOOKS: '0', MTA_DNS_SERVERS: dns.server } });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
  });
  after(async () => { await s.close(); await dns.stop(); });

  it('classifies addresses', () => {
    for (const ip of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '100.64.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1',
      '::1', '::', 'fe80::1', 'fc00::1', 'fd00:ec2::254', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::7f00:1', '::a9fe:a9fe', 'not-an-ip']) {
      expect(isBlockedIp(ip), ip).to.equal(true);
    }
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) expect(isBlockedIp(ip), ip).to.equal(false);
  });

  it('refuses loopback, private, link-local, metadata and plain-http URLs at create and update (422 url)', async () => {
    dns.set('internal.test', { A: ['10.0.0.5'] });
    dns.set('v6local.test', { AAAA: ['::1'] });
    dns.set('mixed.test', { A: ['93.184.216.34', '192.168.0.10'] });
    for (const url of ['https://127.0.0.1/hook', 'https://10.1.2.3/', 'https://169.254.169.254/latest/meta-data', 'https://[::1]/',
      'https://[fd00:ec2::254]/', 'https://[::ffff:127.0.0.1]/', 'https://[::127.0.0.1]/', 'https://localhost/', 'http://example.com/hook',
      'https://internal.test/', 'https://v6local.test/', 'https://mixed.test/', 'https://nxdomain.test/']) {
      const r = await s.api('POST', '/v1/webhooks', { key, body: { url, events: ['delivered'] } });
      expect(r.status, url).to.equal(422);
      expect(r.body.error, url).to.include({ code: 'invalid_parameter', param: 'url' });
    }
    dns.set('public.test', { A: ['93.184.216.34'] });
    const ok = await s.api('POST', '/v1/webhooks', { key, body: { url: 'https://public.test/hook', events: ['delivered'] } });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
    const p = await s.api('PATCH', `/v1/webhooks/${ok.body.id}`, { key, body: { url: 'https://10.0.0.1/' } });
    expect(p.status).to.equal(422);
    expect(p.body.error.param).to.equal('url');
    // Never let a later event send traffic to that public address.
    expect((await s.api('DELETE', `/v1/webhooks/${ok.body.id}`, { key })).status).to.equal(200);
  });

  it('re-checks the address at delivery time (DNS rebinding) and never connects', async () => {
    const rx = await new Receiver().start();
    try {
      // Created while the name points at a public address; it then rebinds to loopback before any event.
      dns.set('rebind.test', { A: ['93.184.216.34'] });
      const ep = await s.api('POST', '/v1/webhooks', { key, body: { url: `https://rebind.test:${rx.port}/hook`, events: ['queued'] } });
      expect(ep.status, JSON.stringify(ep.body)).to.equal(201);
      dns.set('rebind.test', { A: ['127.0.0.1'] });
      await s.api('POST', '/v1/emails', { key, body: { from: 'a@example.com', to: 'b@example.org', subject: 's', text: 't' } });
      await sleep(500);
      expect(rx.got).to.have.length(0);
      const d = (await s.api('GET', `/v1/webhooks/${ep.body.id}/deliveries`, { key })).body.data[0];
      expect(d.status).to.equal('failed');
      expect(d.attempts[0].error).to.match(/private or reserved/);
    } finally { await rx.stop(); }
  });
});

describe('webhooks: DNS failure at delivery time', function () {
  this.timeout(15_000);
  it('retries a delivery whose host does not resolve for now (SERVFAIL) instead of ending it failed', async () => {
    const dns = await new TestDns().start();
    const s = await startTestService({ features: [webhooks], env: { MTA_ALLOW_PRIVATE_WEBHOOKS: '0', MTA_DNS_SERVERS: dns.server, MTA_WEBHOOK_RETRY_MIN_SECONDS: '60' } });
    try {
      const key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
      dns.set('flaky.test', { A: ['93.184.216.34'] });
      const ep = await s.api('POST', '/v1/webhooks', { key, body: { url: 'https://flaky.test/hook', events: ['queued'] } });
      expect(ep.status, JSON.stringify(ep.body)).to.equal(201);
      dns.set('flaky.test', { servfail: true });
      await s.api('POST', '/v1/emails', { key, body: { from: 'a@example.com', to: 'b@example.org', subject: 's', text: 't' } });
      let d: any;
      for (let i = 0; i < 50 && !(d?.attempt_count > 0); i++) {
        await sleep(100);
        d = (await s.api('GET', `/v1/webhooks/${ep.body.id}/deliveries`, { key })).body.data[0];
      }
      expect(d.attempt_count).to.equal(1);
      expect(d.status, JSON.stringify(d)).to.equal('pending');
      expect(d.attempts[0].next_retry_at).to.be.a('string');
      await s.api('DELETE', `/v1/webhooks/${ep.body.id}`, { key });
    } finally { await s.close(); await dns.stop(); }
  });
});

describe('webhooks: POST time-out', () => {
  it('gives up on a receiver that never answers', async () => {
    const server = http.createServer(() => { /* never answers */ });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const r = await postWebhook(url, {}, '{}', { timeoutMs: 200, lookup: null, signal: new AbortController().signal, userAgent: 't' });
      expect(r.statusCode).to.equal(null);
      expect(r.error).to.match(/timed out after 200 ms/);
      expect(r.durationMs).to.be.within(150, 2000);
    } finally { server.closeAllConnections(); server.close(); }
  });
});
