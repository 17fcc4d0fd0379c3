// The SMTP client's session cap per pool (SendOptions.maxSessions, what lets the scheduler keep a message waiting per
// connection): more sends than sessions never open more connections at the MX; a waiting send takes over the
// session whose transaction ends; dropWaiting (shutdown) and the deadline give waiting sends back as not started.
import { expect } from 'chai';
import { TestMx } from '../helpers/smtp-mx.js';
import { SmtpClient } from '../../src/outbound/smtp.js';

const raw = (i: number) =>
  Buffer.from(`From: a@acme.test\r\nTo: u${i}@rcpt.test\r\nSubject: ${i}\r\n\r\nbody ${i}\r\n`);

describe('SMTP client: sessions per pool', function () {
  this.timeout(20_000);
  let mx: TestMx;
  let client: SmtpClient;
  let peak = 0;
  beforeEach(async () => {
    peak = 0;
    mx = new TestMx({
      script: {
        data: () => {
          peak = Math.max(peak, mx.open);
          return { delayMs: 60 };
        },
      },
    });
    await mx.start();
    client = new SmtpClient({ hostname: 'mta.test', port: mx.port, tls: 'off', timeoutMs: 5000, maxMessages: 100 });
  });
  afterEach(async () => {
    client.closeAll();
    await mx.stop();
  });

  const send = (i: number, deadline = Date.now() + 10_000) =>
    client.send(
      { mxHost: 'mx.rcpt.test', ip: '127.0.0.1' },
      'b@acme.test',
      [`u${i}@rcpt.test`],
      raw(i),
      deadline,
      undefined,
      {
        pool: 'lane',
        maxSessions: 2,
      },
    );

  it('sends 8 at once over 2 sessions: every one accepted, never more than 2 connections', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => send(i)));
    expect(results.map((r) => r.verdicts[0].kind)).to.deep.equal(Array(8).fill('accepted'));
    expect(results.some((r) => r.notStarted)).to.equal(false);
    expect(mx.messages).to.have.length(8);
    expect(peak).to.equal(2);
    expect(mx.connections).to.equal(2); // the waiting sends took over the two sessions
    expect(client.openConnections).to.equal(2);
  });

  it('a send still waiting comes back not started when the line is dropped or its deadline passes', async () => {
    const first = [send(0), send(1)];
    const late = send(2, Date.now() + 20); // nothing comes free within 20 ms (each transaction takes 60)
    const dropped = send(3);
    await new Promise((r) => setTimeout(r, 30));
    client.dropWaiting();
    const [a, b, l, d] = await Promise.all([...first, late, dropped]);
    expect([a.verdicts[0].kind, b.verdicts[0].kind]).to.deep.equal(['accepted', 'accepted']);
    for (const r of [l, d]) {
      expect(r.notStarted).to.equal(true);
      expect(r.verdicts[0].kind).to.equal('deferred');
    }
    expect(mx.messages.map((m) => m.to[0]).sort()).to.deep.equal(['u0@rcpt.test', 'u1@rcpt.test']);
  });
});
