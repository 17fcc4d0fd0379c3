// The return path over real servers: TestDns on loopback, the outbound loop delivering to a loopback MX.
// VERP uses bounces.<domain> only once its MX AND its SPF record pass; until then MTA_BOUNCE_DOMAIN.
import { expect } from 'chai';
import { spf } from 'mailauth';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { publish, publishRecord } from '../helpers/domains.js';
import { route } from './outbound-env.js';
import { feature as domains } from '../../src/features/domains.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { signingKeyFor } from '../../src/services/sending-domain.js';
import { runSync } from '../../src/store/op.js';
import { createResolver } from '../../src/services/resolver.js';

describe('sending domains: the return path needs its MX and its SPF record', function () {
  this.timeout(30_000);
  let dns: TestDns;
  let mx: TestMx;
  let s: TestService;
  let team: { id: string };
  let key: string;

  before(async () => {
    dns = await new TestDns().start();
    mx = await new TestMx().start();
    s = await startTestService({
      features: [domains, outbound],
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_SENDING_IPS: '127.0.0.1',
        MTA_DNS_CHECK_CRON: '0 0 1 1 *',
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.3',
        MTA_BOUNCE_DOMAIN: 'bounces.operator.test',
        MTA_OUTBOUND_PORT: String(mx.port),
        MTA_OUTBOUND_TIMEOUT_SECONDS: '1',
        MTA_RATE_LIMIT: '0',
      },
    });
    route(dns, 'rcpt.test');
    team = s.team();
    key = s.key(team.id, 'live', ['domains:read', 'domains:write', 'emails:send']);
    s.credits(team.id, 100);
  });
  after(async () => {
    await s.close();
    await mx.stop();
    await dns.stop();
  });

  const verify = async (id: string) => (await s.api('POST', `/v1/domains/${id}/verify`, { key })).body;
  const returnPath = (d: any) => d.records.filter((r: any) => r.purpose === 'return_path');

  /** Sends a live email and answers the envelope sender the MX received. */
  async function envelopeSender(from: string): Promise<string> {
    const seen = mx.messages.length;
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from, to: 'alice@rcpt.test', subject: 'Hi', text: 'Hello' },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    const until = Date.now() + 8000;
    while (mx.messages.length === seen && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
    expect(mx.messages.length, 'message delivered').to.equal(seen + 1);
    return mx.messages[seen].from;
  }

  async function spfFor(sender: string) {
    const r = createResolver({ dnsServers: [dns.server] });
    return (
      await spf({
        sender,
        ip: '127.0.0.1',
        helo: 'mta.test',
        mta: 'mx.rcpt.test',
        resolver: (n: string, t: string) => r.resolve(n, t as 'TXT') as any,
      })
    ).status.result;
  }

  it('MX without SPF → MTA_BOUNCE_DOMAIN; a wrong SPF fails; the expected SPF → bounces.<domain>, SPF pass', async () => {
    const d = (await s.api('POST', '/v1/domains', { key, body: { name: 'rp.test' } })).body;
    const [rpMx, rpTxt] = returnPath(d);
    expect(rpMx).to.include({ type: 'MX', name: 'bounces.rp.test', value: '10 mta.test' });
    expect(rpTxt).to.include({
      type: 'TXT',
      name: 'bounces.rp.test',
      value: 'v=spf1 ip4:127.0.0.1 ~all',
      status: 'pending',
    });
    expect(d.records.indexOf(rpTxt)).to.equal(4);

    publish(dns, { records: d.records.slice(0, 4) }); // DKIM, SPF, DMARC and the return-path MX, not its TXT
    const v1 = await verify(d.id);
    expect(v1.status).to.equal('verified'); // the return path stays optional
    const [mx1, txt1] = returnPath(v1);
    expect(mx1.status).to.equal('verified');
    expect(txt1).to.include({ status: 'failed', found: null, expected: 'v=spf1 ip4:127.0.0.1 ~all' });
    expect(txt1.error).to.match(/No SPF record/);
    expect(runSync(signingKeyFor(s.ctx, team.id, 'rp.test'))!.returnPath).to.equal(null);
    expect(await envelopeSender('app@rp.test')).to.match(/^bounces\+[0-9a-z-]+@bounces\.operator\.test$/);

    dns.patch('bounces.rp.test', { TXT: ['v=spf1 ip4:192.0.2.99 -all'] });
    const [, txt2] = returnPath(await verify(d.id));
    expect(txt2).to.include({ status: 'failed', found: 'v=spf1 ip4:192.0.2.99 -all' });
    expect(txt2.error).to.match(/fail for 127\.0\.0\.1/);
    expect(runSync(signingKeyFor(s.ctx, team.id, 'rp.test'))!.returnPath).to.equal(null);

    dns.patch('bounces.rp.test', { TXT: [] });
    publishRecord(dns, rpTxt);
    const v3 = await verify(d.id);
    expect(returnPath(v3).map((r: any) => [r.type, r.status])).to.deep.equal([
      ['MX', 'verified'],
      ['TXT', 'verified'],
    ]);
    expect(returnPath(v3)[1]).not.to.have.property('error');
    expect(runSync(signingKeyFor(s.ctx, team.id, 'rp.test'))!.returnPath).to.equal('bounces.rp.test');
    const sender = await envelopeSender('app@rp.test');
    expect(sender).to.match(/^bounces\+[0-9a-z-]+@bounces\.rp\.test$/);
    expect(await spfFor(sender)).to.equal('pass');
  });

  it('a DNS failure at the return-path name keeps it in use; its MX gone stops it', async () => {
    const id = (await s.api('GET', '/v1/domains', { key })).body.data.find((x: any) => x.name === 'rp.test').id;
    const saved = dns.zone.get('bounces.rp.test')!;
    dns.set('bounces.rp.test', { servfail: true });
    const v = await verify(id);
    expect(returnPath(v).map((r: any) => r.status)).to.deep.equal(['verified', 'verified']);
    expect(returnPath(v)[1].error).to.match(/ESERVFAIL|DNS error/);
    expect(runSync(signingKeyFor(s.ctx, team.id, 'rp.test'))!.returnPath).to.equal('bounces.rp.test');

    dns.set('bounces.rp.test', { TXT: saved.TXT });
    const gone = await verify(id);
    expect(returnPath(gone).map((r: any) => r.status)).to.deep.equal(['failed', 'verified']);
    expect(runSync(signingKeyFor(s.ctx, team.id, 'rp.test'))!.returnPath).to.equal(null);
    expect(await envelopeSender('app@rp.test')).to.match(/@bounces\.operator\.test$/);
  });
});
