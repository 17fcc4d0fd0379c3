// Sending domains end to end: the real HTTP API, the loopback DNS server (TestDns) and the node-cron
// re-check running every second: add → publish → verified → live send; records break → failed → refused.
import { expect } from 'chai';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { feature as domains } from '../../src/features/domains.js';
import { signingKeyFor } from '../../src/services/sending-domain.js';
import { runSync } from '../../src/store/op.js';
import { onDomainStatusChange, type DomainStatusChange } from '../../src/services/domain-checks.js';
import { publish, waitFor, liveSend } from '../helpers/domains.js';

describe('sending domains', function () {
  this.timeout(30_000);
  let dns: TestDns;
  let s: TestService;
  let team: { id: string };
  let key: string; // domains:read + domains:write + emails:send, live
  const changes: DomainStatusChange[] = [];

  before(async () => {
    dns = await new TestDns().start();
    s = await startTestService({
      features: [domains],
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_SENDING_IPS: '192.0.2.10',
        MTA_DNS_CHECK_CRON: '*/1 * * * * *',
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.3',
      },
    });
    onDomainStatusChange(s.db, (_db, c) => changes.push(c));
    team = s.team();
    key = s.key(team.id, 'live', ['domains:read', 'domains:write', 'emails:send']);
    s.credits(team.id, 100);
  });
  after(async () => {
    await s.close();
    await dns.stop();
  });

  it('add → records; publish → verify → verified; live sends accepted, also from a sub-domain', async () => {
    expect((await liveSend(s, key, 'hello@example.test')).body.error.code).to.equal('domain_not_verified');
    const add = await s.api('POST', '/v1/domains', { key, body: { name: 'Example.TEST.' } });
    expect(add.status, JSON.stringify(add.body)).to.equal(201);
    const d = add.body;
    expect(d).to.include({ object: 'domain', name: 'example.test', status: 'pending', last_checked_at: null });
    expect(d.id).to.match(/^dom_[0-9a-z]{26}$/);
    expect(d.records.map((r: any) => r.purpose)).to.deep.equal([
      'dkim',
      'spf',
      'dmarc',
      'return_path',
      'return_path',
      'dmarc_report_auth',
    ]);
    const [dkim, spf, dmarc, rp, rpSpf] = d.records;
    expect(dkim).to.include({ type: 'TXT', status: 'pending' });
    expect(dkim.name).to.match(/^mta\d{8}[0-9a-f]{4}\._domainkey\.example\.test$/);
    expect(dkim.value).to.match(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    expect(spf).to.include({ type: 'TXT', name: 'example.test', value: 'v=spf1 ip4:192.0.2.10 ~all' });
    expect(dmarc).to.include({ type: 'TXT', name: '_dmarc.example.test' });
    expect(rp).to.include({ type: 'MX', name: 'bounces.example.test', value: '10 mta.test' });
    expect(rpSpf).to.include({
      type: 'TXT',
      name: 'bounces.example.test',
      value: 'v=spf1 ip4:192.0.2.10 ~all',
      status: 'pending',
    });
    expect(JSON.stringify(d)).not.to.match(/PRIVATE/);

    publish(dns, d);
    const v = await s.api('POST', `/v1/domains/${d.id}/verify`, { key });
    expect(v.status, JSON.stringify(v.body)).to.equal(200);
    expect(v.body.status).to.equal('verified');
    expect(v.body.records.map((r: any) => r.status)).to.deep.equal([
      'verified',
      'verified',
      'verified',
      'verified',
      'verified',
      'verified',
    ]);
    expect(v.body.records[0]).not.to.have.property('error');
    expect(v.body.last_checked_at).to.be.a('string');
    expect(changes.map((c) => [c.domain.name, c.from, c.to])).to.deep.include(['example.test', 'pending', 'verified']);

    expect((await liveSend(s, key, 'hello@example.test')).status).to.equal(202);
    expect((await liveSend(s, key, 'Shop <news@mail.example.test>')).status).to.equal(202);
  });

  it('stores a PKCS8 key whose public half is the published one, and uses the verified return-path', async () => {
    const k = runSync(signingKeyFor(s.ctx, team.id, 'mail.example.test'))!;
    expect(k).to.include({ signingDomain: 'example.test', returnPath: 'bounces.example.test' });
    expect(k.privateKey).to.match(/^-----BEGIN PRIVATE KEY-----/);
    const pub = createPublicKey(createPrivateKey(k.privateKey))
      .export({ type: 'spki', format: 'der' })
      .toString('base64');
    const txt = dns.zone.get(`${k.selector}._domainkey.example.test`)!.TXT![0] as string;
    expect(txt).to.equal(`v=DKIM1; k=rsa; p=${pub}`);
  });

  it('the cron job notices a removed DKIM record (failed, sends refused) and its return (verified again)', async () => {
    const id = (await s.api('GET', '/v1/domains', { key })).body.data.find((x: any) => x.name === 'example.test').id;
    const dkimName = (await s.api('GET', `/v1/domains/${id}`, { key })).body.records[0].name;
    const saved = dns.zone.get(dkimName)!;
    dns.delete(dkimName);
    const failed = await waitFor(s, key, id, 'failed');
    expect(failed.records[0]).to.include({ status: 'failed', found: null });
    expect(failed.records[0].expected).to.equal(failed.records[0].value);
    expect(failed.records[0].error).to.match(/No TXT record/);
    const refused = await liveSend(s, key, 'hello@example.test');
    expect(refused.status).to.equal(422);
    expect(refused.body.error).to.include({ code: 'domain_not_verified', param: 'from' });
    expect(runSync(signingKeyFor(s.ctx, team.id, 'example.test'))).to.equal(null);

    dns.set(dkimName, { TXT: ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong'] });
    const wrong = await s.api('POST', `/v1/domains/${id}/verify`, { key });
    expect(wrong.body.status).to.equal('failed');
    expect(wrong.body.records[0].found).to.contain('wrong');
    expect(wrong.body.records[0].error).to.match(/does not match/);

    dns.set(dkimName, saved);
    const back = await waitFor(s, key, id, 'verified');
    expect(back.records[0].status).to.equal('verified');
    expect((await liveSend(s, key, 'hello@example.test')).status).to.equal(202);
    expect(changes.map((c) => `${c.from}>${c.to}`)).to.include.members(['verified>failed', 'failed>verified']);
  });

  it('a DNS time-out keeps the old status and records the error', async () => {
    const id = (await s.api('GET', '/v1/domains', { key })).body.data.find((x: any) => x.name === 'example.test').id;
    const dkimName = (await s.api('GET', `/v1/domains/${id}`, { key })).body.records[0].name;
    const saved = dns.zone.get(dkimName)!;
    dns.set(dkimName, { stall: true });
    try {
      const r = await s.api('POST', `/v1/domains/${id}/verify`, { key });
      expect(r.body.status).to.equal('verified');
      expect(r.body.records[0]).to.include({ status: 'verified' });
      expect(r.body.records[0].error).to.match(/timed out/);
      expect((await liveSend(s, key, 'hello@example.test')).status).to.equal(202);
    } finally {
      dns.set(dkimName, saved);
    }
    const ok = await s.api('POST', `/v1/domains/${id}/verify`, { key });
    expect(ok.body.records[0]).not.to.have.property('error');
  });

  it('DELETE stops live sends and the domain is gone', async () => {
    const id = (await s.api('GET', '/v1/domains', { key })).body.data.find((x: any) => x.name === 'example.test').id;
    const del = await s.api('DELETE', `/v1/domains/${id}`, { key });
    expect(del.status).to.equal(200);
    expect(del.body).to.deep.equal({ object: 'domain', id, name: 'example.test', deleted: true });
    const refused = await liveSend(s, key, 'hello@example.test');
    expect(refused.body.error.code).to.equal('domain_not_verified');
    expect((await s.api('GET', `/v1/domains/${id}`, { key })).body.error.code).to.equal('domain_not_found');
    expect((await s.api('DELETE', `/v1/domains/${id}`, { key })).status).to.equal(404);
  });
});
