import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth';
import { createResolver } from '../../src/services/resolver.js';
import { readVerp } from '../../src/core/verp.js';
import { secret } from '../../src/store/settings.js';
import { emailByPublicId, deliveriesOf } from '../../src/store/emails.js';
import { outboundEnv, SENDER, type OutboundEnv } from './outbound-env.js';
import { runSync } from '../../src/store/op.js';

describe('outbound delivery: live emails over SMTP', function () {
  this.timeout(20000);
  let e: OutboundEnv;
  beforeEach(async () => {
    e = await outboundEnv();
  });
  afterEach(() => e.close());

  it('delivers a DKIM-signed message to the MX, with headers, VERP sender and attempt facts', async () => {
    const sent = await e.send({
      to: ['alice@rcpt.test'],
      cc: ['carol@rcpt.test'],
      bcc: ['bob@rcpt.test'],
      reply_to: 'help@sender.test',
      html: '<p>Hi <b>there</b></p>',
      headers: { 'X-Campaign': 'welcome' },
    });
    const done = await e.waitStatus(sent.id, ['delivered']);
    expect(done.status).to.equal('delivered');
    // One transaction per recipient, each with its own VERP token; the scheduler may run them on parallel
    // sessions of the site (up to its connection limit); the message itself is built and signed once.
    expect(e.mx.messages).to.have.length(3);
    expect(
      e.mx.messages
        .map((m) => m.to)
        .flat()
        .sort(),
    ).to.deep.equal(['alice@rcpt.test', 'bob@rcpt.test', 'carol@rcpt.test']);
    expect(e.mx.messages.every((m) => m.to.length === 1)).to.equal(true);
    expect(new Set(e.mx.messages.map((m) => m.sessionId)).size).to.equal(e.mx.connections);
    expect(e.mx.connections).to.be.within(1, 3);
    expect(new Set(e.mx.messages.map((m) => m.raw.toString('base64'))).size).to.equal(1);
    const ids = Object.fromEntries(
      runSync(deliveriesOf(e.s.db, runSync(emailByPublicId(e.s.db, sent.id))!.seq)).map((d) => [d.recipient, d.id]),
    );
    for (const m of e.mx.messages) {
      expect(m.from).to.match(/^bounces\+.*@bounces\.mta\.test$/);
      expect(readVerp(runSync(secret(e.s.db, 'verp')), m.from)).to.deep.equal({
        emailId: sent.id,
        deliveryId: ids[m.to[0]],
      });
    }
    const msg = e.mx.messages[0];
    const parsed = await simpleParser(msg.raw);
    expect(parsed.messageId).to.equal(`<${sent.id}@mta.test>`);
    expect(parsed.headers.get('x-campaign')).to.equal('welcome');
    expect(parsed.headers.has('bcc')).to.equal(false);
    expect(msg.raw.toString()).not.to.include('bob@rcpt.test');
    expect(parsed.text?.trim()).to.equal('Hi there');
    expect(parsed.html).to.include('<b>there</b>');
    const r = createResolver({ dnsServers: [e.dns.server] });
    const v = await dkimVerify(msg.raw, {
      resolver: (name: string, type: string) => r.resolve(name, type as 'TXT') as any,
    });
    expect(v.results[0].status.result, JSON.stringify(v.results[0].status)).to.equal('pass');
    expect(v.results[0].signingDomain).to.equal(SENDER);
    const events = await e.events(sent.id);
    expect(events.map((x) => x.type)).to.deep.equal(['queued', 'sent', 'delivered', 'delivered', 'delivered']);
    const d = events[2].data;
    expect(d).to.include({
      attempt: 1,
      mx_host: 'mx.rcpt.test',
      remote_ip: '127.0.0.1',
      smtp_code: 250,
      source: 'smtp',
    });
    expect(d.tls_version).to.match(/^TLSv1\.[23]$/);
    expect(d.tls_cipher).to.be.a('string');
    expect(d.duration_ms).to.be.a('number');
    expect(msg.secure).to.equal(true);
  });
});
