// The validated-lookup DNS client (services/secure-dns.ts) against the loopback DNS server: the AD bit read, the DO
// bit sent, truncation answered over TCP, SERVFAIL as an rcode, silence as a rejection within its time budget, the
// record bound, and the cache (by TTL; failures not kept).
import { expect } from 'chai';
import { TestDns } from '../helpers/dns.js';
import { SecureDns, parseServer } from '../../src/services/secure-dns.js';

describe('SecureDns (validated lookups for DANE)', function () {
  this.timeout(10000);
  let dns: TestDns;
  before(async () => {
    dns = await new TestDns().start();
  });
  after(() => dns.stop());
  const client = (o: Partial<ConstructorParameters<typeof SecureDns>[1]> = {}) =>
    new SecureDns({ dnsServers: [dns.server] }, { timeoutMs: 300, tries: 1, ...o });

  it('reads the AD bit and the records of the type asked', async () => {
    dns.set('secure.sd.test', { MX: [{ exchange: 'mx.secure.sd.test', priority: 5 }], ad: true });
    dns.set('plain.sd.test', { MX: [{ exchange: 'mx.plain.sd.test', priority: 5 }] });
    const a = await client().query('secure.sd.test', 'MX');
    expect(a).to.include({ rcode: 'NOERROR', secure: true, ttl: 60 });
    expect(a.records.map((r: any) => r.data.exchange)).to.deep.equal(['mx.secure.sd.test']);
    expect(await client().query('plain.sd.test', 'MX')).to.include({ rcode: 'NOERROR', secure: false });
    expect(await client().query('nothing.sd.test', 'MX')).to.include({ rcode: 'NXDOMAIN', secure: false });
  });

  it('asks again over TCP when the UDP answer is truncated', async () => {
    const data = Buffer.alloc(32, 1);
    dns.set('_25._tcp.big.sd.test', { TLSA: [{ usage: 3, selector: 1, matching: 1, data }], ad: true, truncate: true });
    const a = await client().query('_25._tcp.big.sd.test', 'TLSA');
    expect(a).to.include({ secure: true });
    expect((a.records[0] as any).data).to.deep.include({ usage: 3, selector: 1, matchingType: 1, certificate: data });
    const asked = dns.queries.filter((q) => q.name === '_25._tcp.big.sd.test').map((q) => q.via);
    expect(asked).to.deep.equal(['udp', 'tcp']);
  });

  it('keeps at most maxRecords records of one answer', async () => {
    dns.set('many.sd.test', { A: Array.from({ length: 20 }, (_, i) => `192.0.2.${i + 1}`), ad: true });
    expect((await client({ maxRecords: 3 }).query('many.sd.test', 'A')).records).to.have.length(3);
  });

  it('SERVFAIL comes back as the rcode; no answer at all rejects (ETIMEOUT) within tries × time-out', async () => {
    dns.set('broken.sd.test', { servfail: true });
    expect(await client().query('broken.sd.test', 'TLSA')).to.include({ rcode: 'SERVFAIL', secure: false });
    dns.set('silent.sd.test', { stall: true });
    const t0 = Date.now();
    const err = await client({ tries: 2 })
      .query('silent.sd.test', 'TLSA')
      .then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
    expect(err?.code).to.equal('ETIMEOUT');
    expect(Date.now() - t0).to.be.within(550, 3000);
  });

  it('caches answers for their TTL, failures not', async () => {
    const c = client();
    dns.set('cached.sd.test', { A: ['192.0.2.1'], ad: true, ttl: 300 });
    await c.cached('cached.sd.test', 'A');
    await c.cached('cached.sd.test', 'A');
    expect(c.sent).to.equal(1);
    dns.set('flaky.sd.test', { servfail: true });
    await c.cached('flaky.sd.test', 'A');
    await c.cached('flaky.sd.test', 'A');
    expect(c.sent).to.equal(3);
  });

  it('reads server addresses as MTA_DNS_SERVERS and dns.getServers() write them', () => {
    expect(parseServer('127.0.0.1:5353')).to.deep.equal({ host: '127.0.0.1', port: 5353 });
    expect(parseServer('127.0.0.1')).to.deep.equal({ host: '127.0.0.1', port: 53 });
    expect(parseServer('[::1]:5353')).to.deep.equal({ host: '::1', port: 5353 });
    expect(parseServer('::1')).to.deep.equal({ host: '::1', port: 53 });
  });
});
