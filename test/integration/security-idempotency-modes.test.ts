// Issue 32 item 4: idempotency is scoped per team AND mode. The same Idempotency-Key (POST /v1/emails, /batch)
// or the same Message-ID (SMTP submission) used by a test key and by a live key names two requests: the live one
// is stored and delivered to the recipient's MX, never answered with the test email (or the other way round).
import { expect } from 'chai';
import { SENDER } from './outbound-env.js';
import { submissionEnv, waitFor, type SubmissionEnv } from './submission-env.js';

describe('security: idempotency is per team and mode (issue 32, item 4)', function () {
  this.timeout(30_000);
  let e: SubmissionEnv;
  before(async () => {
    e = await submissionEnv();
  });
  after(() => e.close());

  const body = (rcpt: string) => ({ from: `App <app@${SENDER}>`, to: rcpt, subject: 'Receipt', text: 'Thanks' });
  const post = (path: string, key: string, idem: string, b: unknown) =>
    e.s.api('POST', path, { key, body: b, headers: { 'Idempotency-Key': idem } });
  const delivered = (rcpt: string) => waitFor(`mail for ${rcpt}`, () => e.mx.to(rcpt)[0]);

  it('POST /v1/emails: a key used by a test key, then by a live key → two emails, the live one delivered', async () => {
    const t = await post('/v1/emails', e.test, 'order-1', body('first-test@rcpt.test'));
    expect(t.status).to.equal(202);
    expect(t.body.test_mode).to.equal(true);
    const l = await post('/v1/emails', e.live, 'order-1', body('first-test@rcpt.test'));
    expect(l.status, JSON.stringify(l.body)).to.equal(202);
    expect(l.headers.get('idempotent-replayed'), 'not a replay of the test email').to.equal(null);
    expect(l.body.id).to.not.equal(t.body.id);
    expect(l.body.test_mode).to.equal(false);
    await e.waitStatus(l.body.id, ['delivered']);
    expect((await delivered('first-test@rcpt.test')).raw.toString()).to.include('Thanks');
    // Each mode still replays its own request.
    const again = await post('/v1/emails', e.live, 'order-1', body('first-test@rcpt.test'));
    expect([again.body.id, again.headers.get('idempotent-replayed')]).to.deep.equal([l.body.id, 'true']);
    const againTest = await post('/v1/emails', e.test, 'order-1', body('first-test@rcpt.test'));
    expect([againTest.body.id, againTest.headers.get('idempotent-replayed')]).to.deep.equal([t.body.id, 'true']);
    expect(e.mx.to('first-test@rcpt.test')).to.have.length(1);
  });

  it('POST /v1/emails: used by a live key first, a test key gets its own test email', async () => {
    const l = await post('/v1/emails', e.live, 'order-2', body('first-live@rcpt.test'));
    expect(l.status).to.equal(202);
    const t = await post('/v1/emails', e.test, 'order-2', body('first-live@rcpt.test'));
    expect(t.status, JSON.stringify(t.body)).to.equal(202);
    expect(t.headers.get('idempotent-replayed')).to.equal(null);
    expect(t.body.id).to.not.equal(l.body.id);
    expect(t.body.test_mode).to.equal(true);
    // The test key cannot see the live email through the replay either: the id it got is its own.
    expect((await e.s.api('GET', `/v1/emails/${t.body.id}`, { key: e.test })).status).to.equal(200);
    await e.waitStatus(l.body.id, ['delivered']);
  });

  it('POST /v1/emails/batch: the same key by a test key and a live key → two batches, the live one delivered', async () => {
    const items = [body('batch-a@rcpt.test'), body('batch-b@rcpt.test')];
    const t = await post('/v1/emails/batch', e.test, 'batch-1', items);
    expect(t.status).to.equal(202);
    const l = await post('/v1/emails/batch', e.live, 'batch-1', items);
    expect(l.status, JSON.stringify(l.body)).to.equal(202);
    expect(l.headers.get('idempotent-replayed')).to.equal(null);
    expect(l.body.data.map((x: any) => x.test_mode)).to.deep.equal([false, false]);
    expect(l.body.data.map((x: any) => x.id)).to.not.have.members(t.body.data.map((x: any) => x.id));
    await delivered('batch-a@rcpt.test');
    await delivered('batch-b@rcpt.test');
  });

  it('SMTP submission: the same Message-ID through a test key, then a live key → two emails, both accepted', async () => {
    const mail = {
      from: `App <app@${SENDER}>`,
      to: 'msgid@rcpt.test',
      subject: 'once per mode',
      text: 'Submitted twice',
      messageId: '<order-9@app.test>',
    };
    const queued = (r: string | undefined) => /queued as (em_\w+)$/.exec(r ?? '')?.[1];
    const t = queued((await e.transport(e.test).sendMail(mail)).response);
    const l = queued((await e.transport(e.live).sendMail(mail)).response);
    expect(t).to.be.a('string');
    expect(l).to.be.a('string').and.not.equal(t);
    expect((await e.waitStatus(l!, ['delivered'])).test_mode).to.equal(false);
    expect((await delivered('msgid@rcpt.test')).raw.toString()).to.include('<order-9@app.test>');
    // The other order, with another Message-ID: the test key gets a test email of its own.
    const l2 = queued((await e.transport(e.live).sendMail({ ...mail, messageId: '<order-10@app.test>' })).response);
    const t2 = queued((await e.transport(e.test).sendMail({ ...mail, messageId: '<order-10@app.test>' })).response);
    expect(t2).to.be.a('string').and.not.equal(l2);
    expect((await e.s.api('GET', `/v1/emails/${t2}`, { key: e.test })).body.test_mode).to.equal(true);
  });
});
