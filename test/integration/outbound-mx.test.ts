// MX host addresses are cached by their DNS TTL (bounded), answers of a loopback DNS server: a short TTL is looked
// up again once it ends, a long one is not; MX answers (no TTL from node:dns) keep the fixed time.
import { expect } from 'chai';
import { TestDns } from '../helpers/dns.js';
import { createResolver } from '../../src/services/resolver.js';
import { MxResolver } from '../../src/outbound/mx.js';
import { outboundEnv, type OutboundEnv } from './outbound-env.js';

describe('outbound MX resolver: caching by DNS TTL', function () {
  this.timeout(10_000);
  let dns: TestDns;
  before(async () => {
    dns = await new TestDns().start();
  });
  after(() => dns.stop());

  it('re-resolves an MX host whose TTL ended, keeps one whose TTL has not', async () => {
    dns.set('short.mx.test', { A: ['127.0.0.1'], ttl: 1 });
    dns.set('long.mx.test', { A: ['127.0.0.1'], ttl: 3600 });
    // Lower bound 500 ms instead of 60 s, so the test need not wait a minute.
    const mx = new MxResolver(createResolver({ dnsServers: [dns.server] }), { minTtlMs: 500 });
    expect(await mx.addresses('short.mx.test')).to.deep.equal(['127.0.0.1']);
    expect(await mx.addresses('long.mx.test')).to.deep.equal(['127.0.0.1']);
    dns.set('short.mx.test', { A: ['127.0.0.2'], ttl: 1 });
    dns.set('long.mx.test', { A: ['127.0.0.2'], ttl: 3600 });
    expect(await mx.addresses('short.mx.test')).to.deep.equal(['127.0.0.1']); // still fresh
    await new Promise((r) => setTimeout(r, 1200));
    expect(await mx.addresses('short.mx.test')).to.deep.equal(['127.0.0.2']);
    expect(await mx.addresses('long.mx.test')).to.deep.equal(['127.0.0.1']);
    expect(dns.queries.filter((q) => q.name === 'long.mx.test' && q.type === 'A')).to.have.length(1);
  });

  it('bounds a TTL below the minimum: a 1 s record stays cached for minTtlMs', async () => {
    dns.set('tiny.mx.test', { A: ['127.0.0.1'], ttl: 1 });
    const mx = new MxResolver(createResolver({ dnsServers: [dns.server] }), { minTtlMs: 3000 });
    await mx.addresses('tiny.mx.test');
    dns.set('tiny.mx.test', { A: ['127.0.0.3'], ttl: 1 });
    await new Promise((r) => setTimeout(r, 1200));
    expect(await mx.addresses('tiny.mx.test')).to.deep.equal(['127.0.0.1']);
  });
});

describe('outbound MX addresses: link-local, unspecified, multicast and metadata addresses are never connected to', function () {
  this.timeout(20_000);
  let env: OutboundEnv;
  before(async () => {
    env = await outboundEnv();
  });
  after(() => env.close());

  async function bounced(domain: string) {
    const before = env.mx.connections;
    const sent = await env.send({ to: `someone@${domain}` });
    const email = await env.waitStatus(sent.id, ['bounced', 'delivered', 'delivery_delayed']);
    const ev = (await env.events(sent.id)).find((e) => e.type === 'bounced');
    return { email, ev, connections: env.mx.connections - before };
  }

  it('bounces invalid_mx (mx_address_refused) when every address of every MX is refused; loopback stays allowed', async () => {
    // 0.0.0.0 first: connecting to it reaches this host's loopback (the test MX), so without the rule the email
    // is delivered here, and no packet ever leaves 127.0.0.0/8.
    env.dns.set('zero.test', { MX: [{ exchange: 'mx.zero.test', priority: 10 }] });
    env.dns.set('mx.zero.test', { A: ['0.0.0.0'], AAAA: ['::'] });
    const zero = await bounced('zero.test');
    expect(zero.email.status).to.equal('bounced');
    expect(zero.connections).to.equal(0);
    expect(zero.ev.data).to.include({ reason: 'invalid_mx', hard: false });
    expect(zero.ev.data.smtp_response).to.match(/^mx_address_refused: mx\.zero\.test \(0\.0\.0\.0, ::\)/);

    env.dns.set('meta.test', {
      MX: [
        { exchange: 'mx.meta.test', priority: 10 },
        { exchange: 'mx2.meta.test', priority: 20 },
      ],
    });
    env.dns.set('mx.meta.test', { A: ['169.254.169.254'], AAAA: ['fd00:ec2::254'] });
    env.dns.set('mx2.meta.test', { A: ['224.0.0.1', '255.255.255.255'], AAAA: ['fe80::1', 'ff02::1'] });
    const meta = await bounced('meta.test');
    expect(meta.email.status).to.equal('bounced');
    expect(meta.connections).to.equal(0);
    expect(meta.ev.data).to.include({ reason: 'invalid_mx', hard: false, enhanced_status: '5.4.4' });

    // One refused MX before a loopback one: the refused address is skipped, the loopback one delivers.
    env.dns.set('mixed.test', {
      MX: [
        { exchange: 'mx.meta.test', priority: 10 },
        { exchange: 'mx.rcpt.test', priority: 20 },
      ],
    });
    const mixed = await env.send({ to: 'someone@mixed.test' });
    expect((await env.waitStatus(mixed.id, ['delivered', 'bounced'])).status).to.equal('delivered');
  });
});
