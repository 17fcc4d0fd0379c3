// The inbound listener ends a session that outlives MTA_INBOUND_MAX_SESSION_SECONDS with 421, even
// when the client keeps it busy with commands (the idle time-out alone would not).
import { expect } from 'chai';
import net from 'node:net';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as inbound } from '../../src/features/inbound.js';
import { smtpPort } from './inbound-fixtures.js';

describe('inbound listener: session length cap', function () {
  this.timeout(10_000);
  let s: TestService;
  before(async () => {
    s = await startTestService({ features: [inbound], env: { MTA_INBOUND_MAX_SESSION_SECONDS: '0.4' } });
  });
  after(() => s.close());

  it('a client sending NOOP every 50 ms is told 421 and disconnected after the cap', async () => {
    const sock = net.connect(smtpPort(s), '127.0.0.1');
    let got = '';
    sock.on('data', (d) => {
      got += d.toString();
    });
    await new Promise<void>((resolve) => sock.once('data', () => resolve())); // the greeting first
    const noop = setInterval(() => {
      if (!sock.destroyed) sock.write('NOOP\r\n');
    }, 50);
    const t0 = Date.now();
    await new Promise<void>((resolve) => sock.on('close', () => resolve()));
    clearInterval(noop);
    const took = Date.now() - t0;
    expect(got).to.match(/^220 /);
    expect(got).to.match(/\r\n421 4\.4\.2 Session too long/);
    expect(took).to.be.within(300, 3000);
    expect((await fetch(`${s.url}/healthz`)).status).to.equal(200);
  });
});
