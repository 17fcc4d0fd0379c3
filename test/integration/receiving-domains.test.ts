// `receiving` on a domain (issue 35): PATCH /v1/domains/{id} {receiving}, shown on the Domain, and its `inbound_mx`
// record (`<domain> MX 10 <MTA_HOSTNAME>`) listed and checked like the others, over TestDns on loopback.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { feature as domains } from '../../src/features/domains.js';

describe('receiving: the domain setting and its inbound MX record', function () {
  this.timeout(30_000);
  let dns: TestDns;
  let s: TestService;
  let key: string;
  let testKey: string;
  let readKey: string;

  before(async () => {
    dns = await new TestDns().start();
    s = await startTestService({
      features: [domains],
      env: { MTA_DNS_SERVERS: dns.server, MTA_DNS_CHECK_CRON: '0 0 1 1 *', MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.3' },
    });
    const team = s.team();
    key = s.key(team.id, 'live', ['domains:read', 'domains:write']);
    testKey = s.key(team.id, 'test', ['domains:read', 'domains:write']);
    readKey = s.key(team.id, 'live', ['domains:read']);
  });
  after(async () => {
    await s.close();
    await dns.stop();
  });

  const inboundMx = (d: any) => d.records.filter((r: any) => r.purpose === 'inbound_mx');

  it('is off by default; PATCH turns it on, lists the inbound_mx record, and a verify checks it', async () => {
    const created = await s.api('POST', '/v1/domains', { key, body: { name: 'in.example.test' } });
    expect(created.status).to.equal(201);
    expect(created.body.receiving).to.equal(false);
    expect(inboundMx(created.body)).to.deep.equal([]);
    const id = created.body.id;

    const on = await s.api('PATCH', `/v1/domains/${id}`, { key, body: { receiving: true } });
    expect(on.status, JSON.stringify(on.body)).to.equal(200);
    expect(on.body.receiving).to.equal(true);
    expect(inboundMx(on.body)).to.deep.equal([
      { purpose: 'inbound_mx', type: 'MX', name: 'in.example.test', value: '10 mta.test', status: 'pending' },
    ]);
    expect((await s.api('GET', `/v1/domains/${id}`, { key })).body.receiving).to.equal(true);

    // nothing published: the check fails, naming what it wants
    let v = (await s.api('POST', `/v1/domains/${id}/verify`, { key })).body;
    expect(inboundMx(v)[0]).to.include({ status: 'failed', error: 'No MX record at this name.' });
    dns.set('in.example.test', { MX: [{ priority: 10, exchange: 'mta.test' }] });
    v = (await s.api('POST', `/v1/domains/${id}/verify`, { key })).body;
    expect(inboundMx(v)[0]).to.deep.equal({
      purpose: 'inbound_mx',
      type: 'MX',
      name: 'in.example.test',
      value: '10 mta.test',
      status: 'verified',
    });

    const off = await s.api('PATCH', `/v1/domains/${id}`, { key, body: { receiving: false } });
    expect(off.body.receiving).to.equal(false);
    expect(inboundMx(off.body)).to.deep.equal([]);
  });

  it('refuses a bad body (422), a test key (403), a read-only key (403), another team (404)', async () => {
    const id = (await s.api('POST', '/v1/domains', { key, body: { name: 'in2.example.test' } })).body.id;
    const bad = await s.api('PATCH', `/v1/domains/${id}`, { key, body: { receiving: 'yes' } });
    expect(bad.status).to.equal(422);
    const extra = await s.api('PATCH', `/v1/domains/${id}`, { key, body: { name: 'x.test' } });
    expect(extra.status).to.equal(422);
    const test = await s.api('PATCH', `/v1/domains/${id}`, { key: testKey, body: { receiving: true } });
    expect(test.status).to.equal(403);
    const ro = await s.api('PATCH', `/v1/domains/${id}`, { key: readKey, body: { receiving: true } });
    expect(ro.status).to.equal(403);
    const other = s.key(s.team().id, 'live', ['domains:write']);
    const missing = await s.api('PATCH', `/v1/domains/${id}`, { key: other, body: { receiving: true } });
    expect(missing.status).to.equal(404);
    expect((await s.api('GET', `/v1/domains/${id}`, { key })).body.receiving).to.equal(false);
  });
});
