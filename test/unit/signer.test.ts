// The signing worker: started from esbuild's bundle of sign-worker.ts (no TypeScript loader in the thread), it
// returns a message whose DKIM signature verifies, like signing on the main thread; a stopped pool signs here.
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import pino from 'pino';
import { dkimVerify } from 'mailauth';
import { SignerPool } from '../../src/outbound/signer.js';
import { composeAndSign, type SignJob } from '../../src/outbound/message.js';

describe('signing worker (SignerPool)', function () {
  this.timeout(20_000);
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
});
