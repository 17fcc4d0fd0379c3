import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { guardedLookup, isBlockedIp } from '../../src/webhooks/ssrf.js';
import { Agents, postWebhook } from '../../src/webhooks/post.js';
import { createResolver } from '../../src/services/resolver.js';
import { Receiver, sleep } from './webhooks-receiver.js';

describe('webhooks: SSRF guard', function () {
  this.timeout(15_000);
  let s: TestService;
  let dns: TestDns;
  let key: string;
  before(async () => {
    dns = await new TestDns().start();
    s = await startTestService({
      features: [webhooks],
      env: { MTA_ALLOW_PRIVATE_WEBHOOKS: '0', MTA_DNS_SERVERS: dns.server },
    });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
  });
  after(async () => {
    await s.close();
    await dns.stop();
  });

  it('classifies addresses', () => {
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd00:ec2::254',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::7f00:1',
      '::a9fe:a9fe',
      'not-an-ip',
    ]) {
      expect(isBlockedIp(ip), ip).to.equal(true);
    }
    for (const ip of ['93.184.216.34', '8.8.8.8', '2606:4700::1111']) expect(isBlockedIp(ip), ip).to.equal(false);
  });

  it('refuses loopback, private, link-local, metadata and plain-http URLs at create and update (422 url)', async () => {
    dns.set('internal.test', { A: ['10.0.0.5'] });
    dns.set('v6local.test', { AAAA: ['::1'] });
    dns.set('mixed.test', { A: ['93.184.216.34', '192.168.0.10'] });
    for (const url of [
      'https://127.0.0.1/hook',
      'https://10.1.2.3/',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/',
      'https://[fd00:ec2::254]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::127.0.0.1]/',
      'https://localhost/',
      'http://example.com/hook',
      'https://internal.test/',
      'https://v6local.test/',
      'https://mixed.test/',
      'https://nxdomain.test/',
    ]) {
      const r = await s.api('POST', '/v1/webhooks', { key, body: { url, events: ['delivered'] } });
      expect(r.status, url).to.equal(422);
      expect(r.body.error, url).to.include({ code: 'invalid_parameter', param: 'url' });
    }
    dns.set('public.test', { A: ['93.184.216.34'] });
    const ok = await s.api('POST', '/v1/webhooks', {
      key,
      body: { url: 'https://public.test/hook', events: ['delivered'] },
    });
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
      const ep = await s.api('POST', '/v1/webhooks', {
        key,
        body: { url: `https://rebind.test:${rx.port}/hook`, events: ['queued'] },
      });
      expect(ep.status, JSON.stringify(ep.body)).to.equal(201);
      dns.set('rebind.test', { A: ['127.0.0.1'] });
      await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'a@example.com', to: 'b@example.org', subject: 's', text: 't' },
      });
      await sleep(500);
      expect(rx.got).to.have.length(0);
      const d = (await s.api('GET', `/v1/webhooks/${ep.body.id}/deliveries`, { key })).body.data[0];
      expect(d.status).to.equal('failed');
      expect(d.attempts[0].error).to.match(/private or reserved/);
    } finally {
      await rx.stop();
    }
  });
});

describe('webhooks: DNS failure at delivery time', function () {
  this.timeout(15_000);
  it('retries a delivery whose host does not resolve for now (SERVFAIL) instead of ending it failed', async () => {
    const dns = await new TestDns().start();
    const s = await startTestService({
      features: [webhooks],
      env: { MTA_ALLOW_PRIVATE_WEBHOOKS: '0', MTA_DNS_SERVERS: dns.server, MTA_WEBHOOK_RETRY_MIN_SECONDS: '60' },
    });
    try {
      const key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
      dns.set('flaky.test', { A: ['93.184.216.34'] });
      const ep = await s.api('POST', '/v1/webhooks', {
        key,
        body: { url: 'https://flaky.test/hook', events: ['queued'] },
      });
      expect(ep.status, JSON.stringify(ep.body)).to.equal(201);
      dns.set('flaky.test', { servfail: true });
      await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'a@example.com', to: 'b@example.org', subject: 's', text: 't' },
      });
      let d: any;
      for (let i = 0; i < 50 && !(d?.attempt_count > 0); i++) {
        await sleep(100);
        d = (await s.api('GET', `/v1/webhooks/${ep.body.id}/deliveries`, { key })).body.data[0];
      }
      expect(d.attempt_count).to.equal(1);
      expect(d.status, JSON.stringify(d)).to.equal('pending');
      expect(d.attempts[0].next_retry_at).to.be.a('string');
      await s.api('DELETE', `/v1/webhooks/${ep.body.id}`, { key });
    } finally {
      await s.close();
      await dns.stop();
    }
  });
});

describe('webhooks: POST time-out', () => {
  it('gives up on a receiver that never answers', async () => {
    const server = http.createServer(() => {
      /* never answers */
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const r = await postWebhook(url, {}, '{}', {
        timeoutMs: 200,
        lookup: null,
        signal: new AbortController().signal,
        userAgent: 't',
      });
      expect(r.statusCode).to.equal(null);
      expect(r.error).to.match(/timed out after 200 ms/);
      expect(r.durationMs).to.be.within(150, 2000);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('webhooks: MTA_ALLOW_PRIVATE_WEBHOOKS=1 still refuses link-local and metadata addresses', function () {
  this.timeout(15_000);
  let s: TestService;
  let key: string;
  before(async () => {
    s = await startTestService({ features: [webhooks], env: { MTA_ALLOW_PRIVATE_WEBHOOKS: '1' } });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
  });
  after(() => s.close());

  const never = [
    '169.254.169.254',
    '169.254.1.1',
    '100.100.100.200',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '239.255.255.250',
    '255.255.255.255',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'ff02::1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::a9fe:a9fe',
    '64:ff9b::a9fe:a9fe',
  ];

  it('classifies: private and loopback pass, link-local, metadata, 0/8 and multicast do not', () => {
    for (const ip of never) expect(isBlockedIp(ip, true), ip).to.equal(true);
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '192.168.1.1',
      '172.16.0.1',
      '::1',
      'fd12::1',
      '::ffff:127.0.0.1',
      '93.184.216.34',
    ])
      expect(isBlockedIp(ip, true), ip).to.equal(false);
  });

  it('refuses them at create and update (422 url), by address and by metadata host name', async () => {
    const urls = [
      ...never.map((ip) => (ip.includes(':') ? `http://[${ip}]/latest/meta-data/` : `http://${ip}/latest/meta-data/`)),
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://METADATA.google.internal./',
      'http://metadata/',
    ];
    for (const url of urls) {
      const r = await s.api('POST', '/v1/webhooks', { key, body: { url, events: ['delivered'] } });
      expect(r.status, url).to.equal(422);
      expect(r.body.error, url).to.include({ code: 'invalid_parameter', param: 'url' });
      expect(r.body.error.message, url).to.match(/link-local, cloud-metadata/);
    }
    const ok = await s.api('POST', '/v1/webhooks', {
      key,
      body: { url: 'http://127.0.0.1:9/hook', events: ['delivered'] },
    });
    expect(ok.status).to.equal(201);
    const p = await s.api('PATCH', `/v1/webhooks/${ok.body.id}`, { key, body: { url: 'http://169.254.169.254/' } });
    expect(p.status).to.equal(422);
    expect((await s.api('GET', `/v1/webhooks/${ok.body.id}`, { key })).body.url).to.equal('http://127.0.0.1:9/hook');
  });

  it('refuses them at connect time, before any connection is opened', async () => {
    const opened: string[] = [];
    class Recording extends Agents {
      for(url: URL) {
        const a = new http.Agent();
        a.createConnection = () => {
          opened.push(url.href);
          throw new Error('the guard let a connection through');
        };
        return a;
      }
    }
    const lookup = guardedLookup(createResolver(s.config), true);
    for (const ip of never) {
      const url = ip.includes(':') ? `http://[${ip}]/` : `http://${ip}/`;
      const r = await postWebhook(url, {}, '{}', {
        timeoutMs: 500,
        lookup,
        allowPrivate: true,
        signal: new AbortController().signal,
        userAgent: 't',
        agents: new Recording(),
      });
      expect(r, url).to.include({ blocked: true, statusCode: null });
    }
    const byName = await postWebhook('http://metadata.google.internal/', {}, '{}', {
      timeoutMs: 500,
      lookup,
      allowPrivate: true,
      signal: new AbortController().signal,
      userAgent: 't',
      agents: new Recording(),
    });
    expect(byName).to.include({ blocked: true });
    expect(byName.error).to.match(/metadata/);
    expect(opened).to.deep.equal([]);
    // The lookup itself refuses an address it is handed, whatever the name (a name that resolves there).
    const verdict = await new Promise<string>((resolve) =>
      lookup('169.254.169.254', {}, (err) => resolve((err as { code?: string } | null)?.code ?? 'none')),
    );
    expect(verdict).to.equal('EBLOCKED');
  });
});

describe('webhooks: the delivery log keeps a short escaped excerpt of the answer', function () {
  this.timeout(15_000);
  it('keeps at most 256 characters, control characters escaped', async () => {
    const answer = '\x1b[31mred\x1b[0m\r\nline2\u202e' + 'x'.repeat(5000);
    const server = http.createServer((_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(answer));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const s = await startTestService({ features: [webhooks], env: { MTA_WEBHOOK_RETRY_MIN_SECONDS: '600' } });
    try {
      const key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
      const ep = (
        await s.api('POST', '/v1/webhooks', {
          key,
          body: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, events: ['queued'] },
        })
      ).body;
      await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'a@example.com', to: 'b@example.org', subject: 's', text: 't' },
      });
      let d: any;
      for (let i = 0; i < 50 && !(d?.attempt_count > 0); i++) {
        await sleep(100);
        d = (await s.api('GET', `/v1/webhooks/${ep.id}/deliveries`, { key })).body.data[0];
      }
      const snippet: string = d.attempts[0].response_snippet;
      expect(snippet.startsWith('\\x1b[31mred\\x1b[0m\\r\\nline2\\u202exxx')).to.equal(true);
      expect(snippet).to.not.match(/[\x00-\x1f\u202e]/);
      expect(snippet.endsWith('…')).to.equal(true);
      expect(snippet.replace(/\\(x..|u....|r|n)/g, '_').length).to.equal(257); // 256 characters of the answer, then …
    } finally {
      await s.close();
      server.closeAllConnections();
      server.close();
    }
  });
});
