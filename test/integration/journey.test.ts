// The whole product in one run, every feature on, real servers only: a domain is added and verified
// through the loopback DNS, a webhook endpoint registered, a live email delivered DKIM-signed (SPF
// passing for its VERP envelope sender) to a loopback MX, then a DSN and a complaint come back to the
// inbound listener; every status change reaches the receiver as a verified Standard Webhooks delivery.
import { expect } from 'chai';
import { authenticate as mailauth } from 'mailauth';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { publish, waitFor } from '../helpers/domains.js';
import { Receiver, verify } from './webhooks-receiver.js';
import { smtpPort, smtpSend, buildDsn, buildArf } from './inbound-fixtures.js';

describe('journey: domain → webhook → live delivery → bounce and complaint back', function () {
  this.timeout(40_000);
  let dns: TestDns, mx: TestMx, hooks: Receiver, s: TestService;
  before(async () => {
    dns = await new TestDns().start();
    mx = await new TestMx().start();
    hooks = await new Receiver().start();
    s = await startTestService({
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_OUTBOUND_PORT: String(mx.port),
        MTA_SENDING_IPS: '127.0.0.1',
        MTA_DNS_CHECK_CRON: '*/1 * * * * *',
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.5',
        MTA_RATE_LIMIT: '0',
      },
    });
    dns
      .set('rcpt.test', { MX: [{ exchange: 'mx.rcpt.test', priority: 10 }] })
      .set('mx.rcpt.test', { A: ['127.0.0.1'] });
    dns.set('mta.test', { A: ['127.0.0.1'] });
  });
  after(async () => {
    await s.close();
    await hooks.stop();
    await mx.stop();
    await dns.stop();
  });

  it('walks an email through every server and tells the team each step', async () => {
    const team = s.team();
    const key = s.key(team.id, 'live', [
      'emails:send',
      'emails:read',
      'domains:read',
      'domains:write',
      'webhooks:write',
    ]);
    s.credits(team.id, 10);

    const dom = (await s.api('POST', '/v1/domains', { key, body: { name: 'acme.test' } })).body;
    publish(dns, dom);
    expect((await s.api('POST', `/v1/domains/${dom.id}/verify`, { key })).body.status).to.equal('verified');
    await waitFor(s, key, dom.id, 'verified');

    const hook = await s.api('POST', '/v1/webhooks', {
      key,
      body: { url: hooks.url, events: ['queued', 'sent', 'delivered', 'bounced', 'complained'] },
    });
    expect(hook.status).to.equal(201);

    const sent = await s.api('POST', '/v1/emails', {
      key,
      body: {
        from: 'Acme <orders@acme.test>',
        to: ['ann@rcpt.test', 'bob@rcpt.test'],
        subject: 'Receipt',
        text: 'Thanks',
        html: '<p>Thanks</p>',
      },
    });
    expect(sent.status).to.equal(202);
    expect(sent.body.credits_charged).to.equal(2);
    const id = sent.body.id;
    const until = Date.now() + 10_000;
    while (Date.now() < until && (await s.api('GET', `/v1/emails/${id}`, { key })).body.status !== 'delivered')
      await new Promise((r) => setTimeout(r, 50));
    expect((await s.api('GET', `/v1/emails/${id}`, { key })).body.status).to.equal('delivered');

    // What the MX got: one transaction per recipient, each with its own VERP envelope sender on the verified return-path, DKIM that verifies.
    expect(mx.messages).to.have.length(2);
    const got = mx.messages.find((m) => m.to[0] === 'ann@rcpt.test')!;
    const gotBob = mx.messages.find((m) => m.to[0] === 'bob@rcpt.test')!;
    expect(mx.messages.map((m) => m.to)).to.have.deep.members([['ann@rcpt.test'], ['bob@rcpt.test']]);
    expect(got.from).to.match(/^bounces\+[0-9a-z-]+@bounces\.acme\.test$/);
    expect(gotBob.from).to.match(/^bounces\+[0-9a-z-]+@bounces\.acme\.test$/);
    expect(gotBob.from).not.to.equal(got.from);
    const auth = await mailauth(got.raw, {
      ip: '127.0.0.1',
      helo: 'mta.test',
      mta: 'mx.rcpt.test',
      sender: got.from,
      resolver: dnsResolver(dns),
    });
    expect(auth.dmarc && auth.dmarc.status.result).to.equal('pass'); // aligned through DKIM (d=acme.test)
    // SPF is evaluated on the envelope sender's domain, bounces.acme.test: its own TXT record authorises us.
    expect(auth.spf && auth.spf.domain).to.equal('bounces.acme.test');
    expect(auth.spf && auth.spf.status.result, JSON.stringify(auth.spf)).to.equal('pass');
    expect(auth.dkim.results[0].status.result, JSON.stringify(auth.dkim.results[0]).slice(0, 800)).to.equal('pass');
    expect(auth.dkim.results[0].signingDomain).to.equal('acme.test');

    // A DSN for bob arrives at bob's VERP address; a complaint for ann arrives at fbl@, quoting ann's Return-Path.
    const port = smtpPort(s);
    const messageId = `<${id}@mta.test>`;
    expect(
      (
        await smtpSend(
          port,
          { from: '', to: [gotBob.from] },
          buildDsn({ to: gotBob.from, recipient: 'bob@rcpt.test', originalMessageId: messageId }),
        )
      ).ok,
    ).to.equal(true);
    expect(
      (
        await smtpSend(
          port,
          { from: 'fbl@provider.test', to: [`fbl@${s.config.bounceDomain}`] },
          buildArf({
            to: `fbl@${s.config.bounceDomain}`,
            recipient: 'ann@rcpt.test',
            originalMessageId: messageId,
            originalReturnPath: got.from,
          }),
        )
      ).ok,
    ).to.equal(true);

    const done = (await s.api('GET', `/v1/emails/${id}`, { key })).body;
    expect(done.status).to.equal('complained');
    const sups = (await s.api('GET', '/v1/suppressions', { key })).body.data.map((x: any) => [x.address, x.reason]);
    expect(sups).to.have.deep.members([
      ['bob@rcpt.test', 'hard_bounce'],
      ['ann@rcpt.test', 'complaint'],
    ]);

    const got2 = await hooks.waitFor(6);
    const payloads = got2.map((r) => verify(hook.body.secret, r));
    const seen = payloads.map((p) => `${p.type}:${p.data.recipient ?? '-'}`);
    expect(seen).to.have.members([
      'queued:-',
      'sent:-',
      'delivered:ann@rcpt.test',
      'delivered:bob@rcpt.test',
      'bounced:bob@rcpt.test',
      'complained:ann@rcpt.test',
    ]);
    const bounced = payloads.find((p) => p.type === 'bounced');
    expect(bounced.data.details).to.include({ async: true, reason: 'userunknown', hard: true, source: 'dsn' });
    expect(payloads.find((p) => p.type === 'complained').data.email.status).to.equal('complained');
    const events = (await s.api('GET', `/v1/emails/${id}/events`, { key })).body.data.map((e: any) => e.type);
    expect(events).to.deep.equal(['queued', 'sent', 'delivered', 'delivered', 'bounced', 'complained']);
  });
});

/** A mailauth resolver answering from the test DNS server's zone (TXT, MX, A). */
function dnsResolver(dns: TestDns) {
  return async (name: string, type: string): Promise<any> => {
    const rec = dns.zone.get(name.toLowerCase().replace(/\.$/, ''));
    const none = Object.assign(new Error(`no ${type} for ${name}`), { code: 'ENOTFOUND' });
    if (!rec) throw none;
    if (type === 'TXT' && rec.TXT) return rec.TXT.map((t) => (Array.isArray(t) ? t : [t]));
    if (type === 'MX' && rec.MX) return rec.MX;
    if (type === 'A' && rec.A) return rec.A;
    throw Object.assign(new Error(`no ${type} for ${name}`), { code: 'ENODATA' });
  };
}
