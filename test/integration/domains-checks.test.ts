// Domain API errors, scopes and pagination, and the record checks against the loopback DNS server:
// never-verified stays pending, SPF evaluated (include, -all), CNAME delegation, DMARC rules, return-path.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { feature as domains } from '../../src/features/domains.js';
import { signingKeyFor } from '../../src/services/sending-domain.js';
import { runSync } from '../../src/store/op.js';
import { publish } from '../helpers/domains.js';

describe('sending domains: API rules and record checks', function () {
  this.timeout(30_000);
  let dns: TestDns;
  let s: TestService;
  let team: { id: string };
  let key: string;
  const verify = async (id: string) => (await s.api('POST', `/v1/domains/${id}/verify`, { key })).body;
  const add = async (name: string) => (await s.api('POST', '/v1/domains', { key, body: { name } })).body;
  const byPurpose = (d: any, p: string) => d.records.find((r: any) => r.purpose === p);

  before(async () => {
    dns = await new TestDns().start();
    // The cron job stays out of the way (yearly); checks here run through POST /verify.
    s = await startTestService({
      features: [domains],
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_SENDING_IPS: '192.0.2.10,2001:db8::10',
        MTA_DNS_CHECK_CRON: '0 0 1 1 *',
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.3',
      },
    });
    team = s.team();
    key = s.key(team.id, 'live', ['domains:read', 'domains:write']);
  });
  after(async () => {
    await s.close();
    await dns.stop();
  });

  it("refuses bad names, duplicates, missing scopes and other teams' domains", async () => {
    for (const name of [
      'localhost',
      'a..b.test',
      '-x.test',
      'x.123',
      '192.0.2.1',
      'a@b.test',
      'x'.repeat(64) + '.test',
    ]) {
      const r = await s.api('POST', '/v1/domains', { key, body: { name } });
      expect(r.status, name).to.equal(422);
      expect(r.body.error, name).to.include({ code: 'invalid_parameter', param: 'name' });
    }
    expect((await s.api('POST', '/v1/domains', { key, body: {} })).body.error).to.include({
      code: 'invalid_parameter',
      param: 'name',
    });
    const d = await add('dup.test');
    const dup = await s.api('POST', '/v1/domains', { key, body: { name: 'DUP.test' } });
    expect(dup.status).to.equal(422);
    expect(dup.body.error).to.include({ type: 'validation_error', code: 'domain_exists', param: 'name' });
    const readOnly = s.key(team.id, 'live');
    expect((await s.api('POST', '/v1/domains', { key: readOnly, body: { name: 'x.test' } })).body.error.code).to.equal(
      'missing_scope',
    );
    expect((await s.api('POST', `/v1/domains/${d.id}/verify`, { key: readOnly })).status).to.equal(403);
    expect((await s.api('GET', `/v1/domains/${d.id}`, { key: readOnly })).status).to.equal(200);
    const other = s.team();
    const otherKey = s.key(other.id, 'live', ['domains:read', 'domains:write']);
    for (const [m, p] of [
      ['GET', ''],
      ['POST', '/verify'],
      ['DELETE', ''],
    ]) {
      const r = await s.api(m, `/v1/domains/${d.id}${p}`, { key: otherKey });
      expect(r.status).to.equal(404);
      expect(r.body.error).to.include({ type: 'not_found', code: 'domain_not_found' });
    }
    expect((await s.api('POST', '/v1/domains', { key: otherKey, body: { name: 'dup.test' } })).status).to.equal(201);
  });

  it('lists domains newest first with a cursor', async () => {
    const t = s.team();
    const k = s.key(t.id, 'live', ['domains:read', 'domains:write']);
    for (const n of ['one.test', 'two.test', 'three.test'])
      expect((await s.api('POST', '/v1/domains', { key: k, body: { name: n } })).status).to.equal(201);
    const p1 = (await s.api('GET', '/v1/domains?limit=2', { key: k })).body;
    expect(p1).to.include({ object: 'list', has_more: true });
    expect(p1.data.map((d: any) => d.name)).to.deep.equal(['three.test', 'two.test']);
    const p2 = (await s.api('GET', `/v1/domains?limit=2&cursor=${p1.next_cursor}`, { key: k })).body;
    expect(p2).to.include({ has_more: false, next_cursor: null });
    expect(p2.data.map((d: any) => d.name)).to.deep.equal(['one.test']);
    expect((await s.api('GET', '/v1/domains?cursor=nope', { key: k })).body.error.param).to.equal('cursor');
  });

  it('a never-verified domain stays pending while checks fail, each record saying what is wrong', async () => {
    const d = await add('pending.test');
    const v = await verify(d.id);
    expect(v.status).to.equal('pending');
    for (const r of v.records) {
      expect(r.status, r.purpose).to.equal('failed');
      expect(r, r.purpose).to.include({ found: null, expected: r.value });
      expect(r.error, r.purpose).to.be.a('string');
    }
    publish(dns, d, ['dkim', 'spf']);
    const v2 = await verify(d.id);
    expect(v2.status).to.equal('pending');
    expect(byPurpose(v2, 'dmarc').status).to.equal('failed');
    publish(dns, d, ['dmarc']);
    const v3 = await verify(d.id);
    expect(v3.status).to.equal('verified');
    expect(byPurpose(v3, 'return_path')).to.include({ status: 'failed', found: null });
    expect(runSync(signingKeyFor(s.ctx, team.id, 'pending.test'))!.returnPath).to.equal(null);
  });

  it('evaluates SPF (include, both address families) rather than matching strings', async () => {
    const d = await add('spf.test');
    publish(dns, d, ['dkim', 'dmarc', 'return_path']);
    dns.patch('spf.test', { TXT: ['v=spf1 include:_spf.provider.test -all'] });
    dns.set('_spf.provider.test', { TXT: ['v=spf1 ip4:192.0.2.0/24 -all'] });
    const half = byPurpose(await verify(d.id), 'spf');
    expect(half.status).to.equal('failed');
    expect(half.error).to.match(/fail for 2001:db8::10/);
    expect(half.found).to.equal('v=spf1 include:_spf.provider.test -all');
    dns.set('_spf.provider.test', { TXT: ['v=spf1 ip4:192.0.2.0/24 ip6:2001:db8::/32 -all'] });
    const ok = await verify(d.id);
    expect(ok.status).to.equal('verified');
    expect(byPurpose(ok, 'return_path').status).to.equal('verified');
    expect(runSync(signingKeyFor(s.ctx, team.id, 'spf.test'))!.returnPath).to.equal('bounces.spf.test');
    dns.patch('spf.test', { TXT: ['v=spf1 -all'] });
    const bad = await verify(d.id);
    expect(bad.status).to.equal('failed');
    expect(byPurpose(bad, 'spf')).to.include({ status: 'failed', found: 'v=spf1 -all' });
  });

  it('follows CNAME delegation of the DKIM and return-path names, and judges DMARC records', async () => {
    const d = await add('cname.test');
    publish(dns, d, ['spf']);
    const dkim = byPurpose(d, 'dkim');
    dns.set(dkim.name, { CNAME: 'keys.provider.test' });
    dns.set('keys.provider.test', { TXT: [dkim.value.replace(/(.{60})/g, '$1 ')] }); // whitespace inside p= is ignored
    dns.set('bounces.cname.test', { CNAME: 'bounces.mta.test' });
    dns.set('bounces.mta.test', {
      MX: [{ priority: 5, exchange: 'mta.test' }],
      TXT: ['v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 -all'],
    });
    dns.set('_dmarc.cname.test', { TXT: ['v=DMARC1; p=reject', 'v=DMARC1; p=none'] });
    const two = await verify(d.id);
    expect(byPurpose(two, 'dkim').status).to.equal('verified');
    expect(
      two.records.filter((r: any) => r.purpose === 'return_path').map((r: any) => [r.type, r.status]),
    ).to.deep.equal([
      ['MX', 'verified'],
      ['TXT', 'verified'],
    ]);
    expect(byPurpose(two, 'dmarc').error).to.match(/More than one/);
    expect(two.status).to.equal('pending');
    dns.set('_dmarc.cname.test', { TXT: ['v=DMARC1; rua=mailto:x@cname.test'] });
    expect(byPurpose(await verify(d.id), 'dmarc').error).to.match(/p=none/);
    dns.set('_dmarc.cname.test', { TXT: ['v=spf1 -all', ['v=DMARC1; p=quar', 'antine; pct=100']] });
    expect((await verify(d.id)).status).to.equal('verified');
  });

  it('suggests rua=mailto:dmarc@<bounce domain> and lists and checks the report authorisation record', async () => {
    const d = await add('reports.test');
    expect(byPurpose(d, 'dmarc').value).to.equal(
      'v=DMARC1; p=none; adkim=r; aspf=r; rua=mailto:dmarc@bounces.mta.test',
    );
    const auth = byPurpose(d, 'dmarc_report_auth');
    expect(auth).to.include({
      type: 'TXT',
      name: 'reports.test._report._dmarc.bounces.mta.test',
      value: 'v=DMARC1',
      status: 'pending',
    });
    expect(d.records.indexOf(auth)).to.equal(d.records.length - 1); // after every DKIM record
    publish(dns, d, ['dkim', 'spf', 'dmarc', 'return_path']);
    const one = await verify(d.id);
    expect(one.status).to.equal('verified'); // not required for the domain's status
    expect(byPurpose(one, 'dmarc_report_auth')).to.include({ status: 'failed', found: null, expected: 'v=DMARC1' });
    expect(byPurpose(one, 'dmarc_report_auth').error).to.match(/No TXT record/);
    publish(dns, d, ['dmarc_report_auth']);
    const two = await verify(d.id);
    expect(byPurpose(two, 'dmarc_report_auth')).to.include({ status: 'verified' });
    expect(byPurpose(two, 'dmarc_report_auth')).not.to.have.property('error');
    expect(dns.queries.some((q) => q.name === 'reports.test._report._dmarc.bounces.mta.test')).to.equal(true);
  });

  it('SERVFAIL is inconclusive: the status stays and the error is recorded', async () => {
    const d = await add('servfail.test');
    publish(dns, d);
    expect((await verify(d.id)).status).to.equal('verified');
    dns.set('_dmarc.servfail.test', { servfail: true });
    const v = await verify(d.id);
    expect(v.status).to.equal('verified');
    expect(byPurpose(v, 'dmarc')).to.include({ status: 'verified' });
    expect(byPurpose(v, 'dmarc').error).to.match(/ESERVFAIL/);
  });
});
