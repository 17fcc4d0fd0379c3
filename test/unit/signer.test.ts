// The outbound worker: started from esbuild's bundle of sign-worker.ts (no TypeScript loader in the thread), it
// returns a message whose DKIM signature verifies, like signing on the main thread; a stopped pool signs here. It
// runs SMTP transactions to a loopback server, rests after a burst (its idle sessions reported gone) and starts again.
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import pino from 'pino';
import { dkimVerify } from 'mailauth';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';
import { SignerPool } from '../../src/outbound/signer.js';
import { composeAndSign, type SignJob } from '../../src/outbound/message.js';

describe('signing worker (SignerPool)', function () {
  this.timeout(60_000);
  // The worker bundled by esbuild as it starts (the service run from source), not dist/sign-worker.cjs, which the
  // other test files use while the bundle is fresh (test/helpers/prebuilt.ts).
  let prebuilt: string | undefined;
  before(() => {
    prebuilt = process.env.MTA_PREBUILT_WORKER;
    process.env.MTA_PREBUILT_WORKER = '0';
  });
  after(() => {
    if (prebuilt === undefined) delete process.env.MTA_PREBUILT_WORKER;
    else process.env.MTA_PREBUILT_WORKER = prebuilt;
  });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const job: SignJob = {
    fields: {
      id: 'em_test1',
      from_addr: 'App <app@sender.test>',
      to_json: JSON.stringify(['user@dest.test']),
      cc_json: null,
      reply_to: null,
      subject: 'Hello',
      text: 'Hi there\n',
      headers_json: null,
      scheduled_at: null,
      created_at: Date.UTC(2026, 0, 2),
    },
    html: '<p>Hi</p>',
    hostname: 'mta.test',
    keys: {
      rsa: {
        signingDomain: 'sender.test',
        selector: 's1',
        privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
      },
      ed25519: null,
    },
  };

  const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const verify = async (raw: Buffer) => {
    const resolver = async (name: string) => {
      if (name !== 's1._domainkey.sender.test') throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
      return [[`v=DKIM1; k=rsa; p=${pub}`]];
    };
    const v = await dkimVerify(raw, { resolver: resolver as any });
    return v.results.map((r: any) => `${r.signingDomain} ${r.status.result}`);
  };

  it('signs on the worker thread: the signature verifies, as one made on the main thread does', async () => {
    const pool = new SignerPool(pino({ level: 'silent' }));
    pool.start();
    const t = Date.now();
    while (!pool.onWorker && Date.now() - t < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(pool.onWorker).to.equal(true);
    const [a, b] = await Promise.all([pool.sign(job), composeAndSign(job)]);
    expect(await verify(a)).to.deep.equal(['sender.test pass']);
    expect(await verify(b)).to.deep.equal(['sender.test pass']);
    expect(a.toString()).to.include('Message-ID: <em_test1@mta.test>');
    await pool.stop();
    expect(pool.onWorker).to.equal(false);
    expect(await verify(await pool.sign(job))).to.deep.equal(['sender.test pass']);
  });

  it('runs SMTP transactions on the worker; rests when trimmed (idle sessions reported gone); a send starts it again and waits for it', async () => {
    const got: { from: string; to: string[]; data: Buffer }[] = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      onData(stream, session, cb) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          got.push({
            from: (session.envelope.mailFrom as { address: string }).address,
            to: session.envelope.rcptTo.map((r) => r.address),
            data: Buffer.concat(chunks),
          });
          cb();
        });
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.server.address() as AddressInfo).port;
    const gone: string[] = [];
    const pool = new SignerPool(pino({ level: 'silent' }));
    pool.useSmtp({ hostname: 'mta.test', port, tls: 'off', timeoutMs: 5000, maxMessages: 100 }, (k) => gone.push(k));
    const up = async () => {
      const t = Date.now();
      while (!pool.onWorker && Date.now() - t < 10_000) await new Promise((r) => setTimeout(r, 20));
      expect(pool.onWorker).to.equal(true);
    };
    try {
      pool.start();
      await up();
      const raw = await pool.sign(job);
      const target = { mxHost: '127.0.0.1', ip: '127.0.0.1' };
      // The transaction's deadline is an input here, not what the test measures: 60 s, since the send after the rest
      // waits for the worker's start (esbuild's bundle, then the thread), which outlasted 5 s at load ~20 (deferred).
      const send = () =>
        pool.send(target, 'b-1@bounce.test', ['user@dest.test'], raw, Date.now() + 60_000, undefined, {
          pool: 'ip site',
        });
      const first = await send();
      expect(first?.verdicts[0].kind).to.equal('accepted');
      expect(first?.closed).to.equal(false);
      expect(got).to.have.length(1);
      expect(got[0].from).to.equal('b-1@bounce.test');
      expect(got[0].to).to.deep.equal(['user@dest.test']);
      // DATA ends the message on a line of its own and sends every line end as CRLF
      const text = (b: Buffer) => b.toString().replace(/\r?\n/g, '\r\n').replace(/\r\n$/, '');
      expect(text(got[0].data)).to.equal(text(raw));

      // trim() resolves once the thread has ended and its idle sessions are reported gone (polling onWorker, which
      // turns false before the thread is terminated, read `gone` too early on a loaded box).
      await pool.trim();
      expect(pool.onWorker).to.equal(false);
      expect(gone).to.include('ip site');

      // Resting: a send starts the worker again and waits for it (it never goes out from this thread, where its
      // lane's session would keep the lane's later sends).
      const waited = send();
      expect(waited === null).to.equal(false);
      expect((await waited)?.verdicts[0].kind).to.equal('accepted');
      expect(pool.onWorker).to.equal(true);
      expect((await send())?.verdicts[0].kind).to.equal('accepted');
      expect(got).to.have.length(3);
    } finally {
      await pool.stop();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
