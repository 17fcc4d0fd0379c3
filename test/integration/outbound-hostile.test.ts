import { expect } from 'chai';
import { outboundEnv, route, sleep, type OutboundEnv } from './outbound-env.js';
import { TestMx, startRawMx, type MxScript } from '../helpers/smtp-mx.js';
import type { OutboundLoop } from '../../src/outbound/index.js';

// Each hostile MX listens on its own loopback address with the same port as the good one.
describe('outbound delivery: hostile or broken receivers', function () {
  this.timeout(60000);
  let e: OutboundEnv | undefined;
  const extra: { stop(): Promise<void> }[] = [];
  beforeEach(() => {
    e = undefined;
  });
  afterEach(async () => {
    for (const x of extra.splice(0)) await x.stop();
    await e?.close();
  });

  async function hostile(ip: string, domain: string, script: MxScript) {
    const mx = await new TestMx({ host: ip, port: e!.mx.port, script }).start();
    extra.push(mx);
    route(e!.dns, domain, ip);
    return mx;
  }
  const loop = () => (e!.s.svc as any).components.find((c: any) => c.name === 'outbound') as OutboundLoop;

  it('a drop mid-DATA, a stalled greeting, a stalled RCPT and garbage each cost only their own recipients a retry', async () => {
    // Stalls of 20 s (a transaction's deadline: 16 s, outbound/index.ts timings).
    e = await outboundEnv({ env: { MTA_OUTBOUND_TIMEOUT_SECONDS: '20', MTA_RETRY_MAX_SECONDS: '20' } });
    await hostile('127.0.0.2', 'dropper.test', { data: () => ({ dropMidData: true }) });
    await hostile('127.0.0.3', 'staller.test', { connect: () => ({ stall: true }) });
    await hostile('127.0.0.4', 'slowrcpt.test', { rcpt: () => ({ stall: true }) });
    const raw = await startRawMx('127.0.0.5', e.mx.port, (s) =>
      s.write('HTTP/1.1 400 Bad Request\r\n\r\n<html>garbage</html>\r\n'),
    );
    extra.push(raw);
    route(e.dns, 'garbage.test', '127.0.0.5');
    const bad = await Promise.all(
      ['dropper', 'staller', 'slowrcpt', 'garbage'].map((d) => e!.send({ to: `x@${d}.test` })),
    );
    const good = await Promise.all(Array.from({ length: 20 }, (_, i) => e!.send({ to: `u${i}@rcpt.test` })));
    for (const g of good) await e.waitStatus(g.id, ['delivered']);
    // Not held up by the stalls: every good recipient is delivered while the stalled sessions still hang (an order
    // of events, not a time a loaded box can stretch; 20 deliveries take well under a second on a quiet one).
    for (const b of bad.slice(1, 3)) {
      const types = (await e.events(b.id)).map((x: any) => x.type);
      expect(types, 'good domain delivered before the stalls end').to.not.include('delivery_delayed');
    }
    for (const b of bad) {
      await e.waitStatus(b.id, ['delivery_delayed'], 30000);
      const d = (await e.events(b.id)).find((x: any) => x.type === 'delivery_delayed').data;
      expect(d.hard).to.equal(false);
      expect(d.smtp_response).to.be.a('string');
    }
    expect(raw.connections).to.be.greaterThan(0);
    const st = loop().stats();
    expect(st.active).to.be.lessThan(8);
  });

  it('a server answering 421 or a 5xx greeting: deferred / bounced, and nothing leaks', async () => {
    e = await outboundEnv();
    await hostile('127.0.0.6', 'busy.test', {
      connect: () => ({ code: 421, message: '4.7.0 Too many connections, try later' }),
    });
    await hostile('127.0.0.7', 'closed.test', {
      connect: () => ({ code: 554, message: '5.7.1 No SMTP service here' }),
    });
    const a = await e.send({ to: 'x@busy.test' });
    const b = await e.send({ to: 'x@closed.test' });
    await e.waitStatus(a.id, ['delivery_delayed']);
    await e.waitStatus(b.id, ['bounced']);
    await sleep(100);
    const smtp = (loop() as any).deps.smtp;
    expect(smtp.openConnections).to.be.lessThan(3);
  });

  it('STARTTLS required: a receiver without STARTTLS is deferred, never sent in clear', async () => {
    e = await outboundEnv({ env: { MTA_OUTBOUND_TLS: 'required' } });
    const noTls = await new TestMx({ host: '127.0.0.8', port: e.mx.port, tls: false }).start();
    extra.push(noTls);
    route(e.dns, 'plain.test', '127.0.0.8');
    const a = await e.send({ to: 'x@plain.test' });
    const b = await e.send({ to: 'x@rcpt.test' });
    await e.waitStatus(a.id, ['delivery_delayed']);
    await e.waitStatus(b.id, ['delivered']);
    expect(noTls.messages).to.have.length(0);
    expect(e.mx.messages[0].secure).to.equal(true);
  });
});
