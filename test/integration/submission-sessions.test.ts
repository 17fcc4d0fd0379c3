// SMTP submission session limits (docs/submission.md): a session that does not authenticate in time, or that outlives
// MTA_SUBMISSION_MAX_SESSION_SECONDS, is told 421 4.4.2 and closed even when it keeps sending commands; an
// authenticated one is never cut in the middle of a message, only after it.
import { expect } from 'chai';
import net from 'node:net';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as submission } from '../../src/features/submission.js';
import { submissionPort } from './submission-env.js';

/** A raw SMTP client: what the server said so far, and whether it closed. */
function client(port: number) {
  const sock = net.connect(port, '127.0.0.1');
  const state = { got: '', closedAt: 0 };
  sock.on('data', (d) => (state.got += d.toString()));
  sock.on('close', () => (state.closedAt = Date.now()));
  sock.on('error', () => {});
  const until = async (re: RegExp, ms = 5000) => {
    const end = Date.now() + ms;
    while (!re.test(state.got)) {
      if (Date.now() > end) throw new Error(`no ${re} in ${JSON.stringify(state.got)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const closed = () =>
    state.closedAt ? Promise.resolve() : new Promise<void>((resolve) => sock.once('close', () => resolve()));
  return { sock, state, until, closed, write: (s: string) => void (sock.destroyed || sock.write(s)) };
}

describe('SMTP submission: session limits', function () {
  this.timeout(20_000);
  let s: TestService;
  let key: string;
  let port: number;
  before(async () => {
    s = await startTestService({ features: [submission], env: { MTA_SUBMISSION_MAX_SESSION_SECONDS: '1' } });
    key = s.key(s.team().id, 'test');
    port = submissionPort({ s });
  });
  after(() => s.close());

  const auth = async (c: ReturnType<typeof client>) => {
    await c.until(/^220 /);
    c.write('EHLO client.test\r\n');
    await c.until(/250 .*\r\n$/);
    c.write(`AUTH PLAIN ${Buffer.from(`\0apikey\0${key}`).toString('base64')}\r\n`);
    await c.until(/\r\n235 /);
  };

  it('ends an unauthenticated session kept busy with NOOP', async () => {
    const c = client(port);
    await c.until(/^220 /);
    const t0 = Date.now();
    // one NOOP per 250 ms: under smtp-server's own cap of 10 unauthenticated commands within the limit
    const noop = setInterval(() => c.write('NOOP\r\n'), 250);
    await c.closed();
    clearInterval(noop);
    expect(c.state.got, JSON.stringify(c.state.got.slice(-300))).to.match(/\r\n421 4\.4\.2 Session too long/);
    expect(c.state.closedAt - t0).to.be.within(800, 5000);
  });

  it('ends an authenticated session past the limit between messages, not during one', async () => {
    const c = client(port);
    const t0 = Date.now();
    await auth(c);
    c.write('MAIL FROM:<app@acme.test>\r\nRCPT TO:<user@example.org>\r\nDATA\r\n');
    await c.until(/\r\n354 /);
    c.write('From: app@acme.test\r\nTo: user@example.org\r\nSubject: slow\r\n\r\nfirst line\r\n');
    // past the limit (1 s) with the message still open, short of twice the limit
    await new Promise((r) => setTimeout(r, Math.max(0, 1400 - (Date.now() - t0))));
    expect(c.state.closedAt, 'closed during the message').to.equal(0);
    c.write('last line\r\n.\r\n');
    await c.until(/\r\n250 2\.0\.0 Ok: queued as em_/);
    await c.closed();
    expect(c.state.got).to.match(/queued as em_\S+\r\n421 4\.4\.2 Session too long/);
    const list = await s.api('GET', '/v1/emails', { key });
    expect(list.body.data.map((e: { subject: string }) => e.subject)).to.include('slow');
  });

  it('ends an authenticated session that only sends NOOP once it is over the limit', async () => {
    const c = client(port);
    const t0 = Date.now();
    await auth(c);
    const noop = setInterval(() => c.write('NOOP\r\n'), 100);
    await c.closed();
    clearInterval(noop);
    expect(c.state.got).to.match(/\r\n421 4\.4\.2 Session too long/);
    expect(c.state.closedAt - t0).to.be.within(800, 5000);
  });
});
