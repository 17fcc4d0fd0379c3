// SMTP submission limits: the per-key rate limit takes from the same buckets as the HTTP API (451 4.7.1 over SMTP,
// 429 over HTTP once SMTP used them), and AUTH without TLS is accepted from a loopback client.
import { expect } from 'chai';
import nodemailer from 'nodemailer';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as submission } from '../../src/features/submission.js';

describe('SMTP submission limits', function () {
  this.timeout(20_000);
  let s: TestService;
  let key: string;
  let port: number;
  before(async () => {
    s = await startTestService({ features: [submission], env: { MTA_RATE_LIMIT: '0.01', MTA_RATE_BURST: '2' } });
    key = s.key(s.team().id, 'test');
    const c = s.svc.components.find((x) => x.name === 'submission-smtp')!;
    port = Number(/submission=127\.0\.0\.1:(\d+)/.exec(c.address!()!)![1]);
  });
  after(() => s.close());

  it('shares the key bucket with the API: 2 messages, then 451 4.7.1 and an HTTP 429; plain AUTH from loopback', async () => {
    const t = nodemailer.createTransport({
      host: '127.0.0.1',
      port,
      ignoreTLS: true,
      auth: { user: 'apikey', pass: key },
    });
    const mail = { from: 'a@acme.test', to: 'b@example.org', subject: 's', text: 'x' };
    for (let i = 0; i < 2; i++) expect((await t.sendMail(mail)).response).to.match(/^250 2\.0\.0 Ok: queued as em_/);
    const third = await t.sendMail(mail).catch((x: unknown) => x as any);
    expect(third.response).to.match(/^451 4\.7\.1 /);
    const http = await s.api('GET', '/v1/emails', { key });
    expect(http.status).to.equal(429);
    expect((await s.api('GET', '/v1/emails', { key: s.key(s.team().id, 'test') })).status).to.equal(200);
  });
});
