// MX host addresses are cached by their DNS TTL (bounded), answers of a loopback DNS server: a short TTL is looked
// up again once it ends, a long one is not; MX answers (no TTL from node:dns) keep the fixed time.
import { expect } from 'chai';
import { TestDns } from '../helpers/dns.js';
import { createResolver } from '../../src/services/resolver.js';
import { MxResolver } from '../../src/outbound/mx.js';

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
