// SMTP submission through nodemailer's SMTP transport (STARTTLS, AUTH PLAIN/LOGIN with an API key): plain, HTML+text,
// a 3 MB attachment and an inline image reach the loopback MX byte-identical in their body, DKIM-valid, Bcc absent;
// every refusal is an SMTP reply with its enhanced code; a test key never delivers; Message-ID idempotency.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer';
import { SENDER } from './outbound-env.js';
import { submissionEnv, bodyOf, expectDkimPass, sha, waitFor, type SubmissionEnv } from './submission-env.js';
import { count } from '../helpers/factories.js';

const FROM = `App <app@${SENDER}>`;

describe('SMTP submission (nodemailer)', function () {
  this.timeout(30_000);
  let e: SubmissionEnv;
  before(async () => {
    e = await submissionEnv({ MTA_MAX_MESSAGE_BYTES: String(6 * 1024 * 1024) });
  });
  after(() => e.close());

  const received = (rcpt: string) => waitFor(`mail for ${rcpt}`, () => e.mx.to(rcpt)[0]);
  const queuedId = (response: string | undefined) =>
    /^250 2\.0\.0 Ok: queued as (em_[0-9a-z]{26})$/.exec(response ?? '')?.[1];

  it('sends a plain message: 250 names the email, DKIM-valid at the MX, Bcc only in the envelope', async () => {
    const info = await e.transport(e.live).sendMail({
      from: FROM,
      to: 'ann@rcpt.test',
      bcc: 'hidden@rcpt.test',
      subject: 'Plain',
      text: 'Hello over SMTP',
    });
    const id = queuedId(info.response);
    expect(id, info.response).to.be.a('string');
    const email = await e.waitStatus(id!, ['delivered']);
    expect(email).to.include({
      from: '"App" <app@sender.test>',
      subject: 'Plain',
      test_mode: false,
      credits_charged: 2,
    });
    expect(email.to).to.deep.equal(['ann@rcpt.test']);
    expect(email.bcc).to.deep.equal(['hidden@rcpt.test']);
    const [ann, hidden] = [await received('ann@rcpt.test'), await received('hidden@rcpt.test')];
    for (const m of [ann, hidden]) {
      expect(m.raw.toString()).not.to.match(/^bcc:/im);
      expect(m.raw.toString()).not.to.include('hidden@rcpt.test');
      expect(m.from).to.match(/^bounces\+.*@bounces\.mta\.test$/);
      await expectDkimPass(e, m.raw);
    }
    expect((await simpleParser(ann.raw)).text?.trim()).to.equal('Hello over SMTP');
  });

  it('keeps the MIME structure: HTML+text, a 3 MB attachment and an inline image, byte-identical body', async () => {
    const big = randomBytes(3 * 1024 * 1024);
    const png = randomBytes(4096);
    const mail = {
      from: FROM,
      to: 'bob@rcpt.test',
      subject: 'Receipt',
      text: 'Your receipt',
      html: '<p>Your receipt <img src="cid:logo@app"></p>',
      headers: { 'X-Order': '42' },
      attachments: [
        { filename: 'receipt.bin', content: big },
        { filename: 'logo.png', content: png, cid: 'logo@app' },
      ],
    };
    const sent = await new MailComposer(mail).compile().build();
    const info = await e
      .transport(e.live)
      .sendMail({ envelope: { from: 'x@y.test', to: ['bob@rcpt.test'] }, raw: sent });
    const id = queuedId(info.response)!;
    const email = await e.waitStatus(id, ['delivered']);
    expect(email.attachments).to.have.deep.members([
      { filename: 'logo.png', content_type: 'image/png', size: 4096 },
      { filename: 'receipt.bin', content_type: 'application/octet-stream', size: big.length },
    ]);
    const m = await received('bob@rcpt.test');
    expect(sha(bodyOf(m.raw)), 'the body leaves as submitted').to.equal(sha(bodyOf(sent)));
    await expectDkimPass(e, m.raw);
    const parsed = await simpleParser(m.raw);
    const byName = Object.fromEntries(parsed.attachments.map((a) => [a.filename, a]));
    expect(sha(byName['receipt.bin'].content)).to.equal(sha(big));
    expect(sha(byName['logo.png'].content)).to.equal(sha(png));
    expect(byName['logo.png'].contentId).to.equal('<logo@app>');
    expect(m.raw.toString()).to.include('<img src="cid:logo@app">');
    expect(parsed.text?.trim()).to.equal('Your receipt');
    expect(parsed.headers.get('x-order')).to.equal('42');
    expect(parsed.messageId, 'the client Message-ID is kept').to.equal((await simpleParser(sent)).messageId);
  });

  it('adds Message-ID and Date when the client gives none', async () => {
    const raw = Buffer.from(`From: ${FROM}\r\nTo: cy@rcpt.test\r\nSubject: bare\r\n\r\nbody\r\n`);
    const info = await e.transport(e.live).sendMail({ envelope: { from: 'x@y.test', to: ['cy@rcpt.test'] }, raw });
    const id = queuedId(info.response)!;
    const parsed = await simpleParser((await received('cy@rcpt.test')).raw);
    expect(parsed.messageId).to.equal(`<${id}@mta.test>`);
    expect(parsed.date).to.be.instanceOf(Date);
  });

  it('answers the same Message-ID within 24 hours with the same email, storing nothing new', async () => {
    const mail = { from: FROM, to: 'dee@rcpt.test', subject: 'once', text: 'x', messageId: '<order-7@app.test>' };
    const a = queuedId((await e.transport(e.live).sendMail(mail)).response);
    const n = count(e.s.db, 'emails');
    const b = queuedId((await e.transport(e.live).sendMail(mail)).response);
    expect(b).to.equal(a);
    expect(count(e.s.db, 'emails')).to.equal(n);
  });

  it('takes AUTH LOGIN too; a test key is accepted and never delivers', async () => {
    const t = e.transport(e.test, { authMethod: 'LOGIN' });
    const info = await t.sendMail({ from: FROM, to: 'tess@rcpt.test', subject: 'test mode', text: 'x' });
    const id = queuedId(info.response)!;
    const email = await e.waitStatus(id, ['delivered'], 8000, e.test);
    expect(email.test_mode).to.equal(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(e.mx.to('tess@rcpt.test')).to.have.length(0);
  });

  it('refuses with SMTP replies: wrong key 535 5.7.8, no AUTH 530 5.7.0, unverified From 550 5.7.1', async () => {
    const bad = await e
      .transport('ps_live_wrong')
      .sendMail({ from: FROM, to: 'a@rcpt.test', text: 'x' })
      .catch((x: unknown) => x as any);
    expect(bad.responseCode).to.equal(535);
    expect(bad.response).to.match(/^535 5\.7\.8 /);
    const anon = await e
      .transport(e.live, { auth: undefined })
      .sendMail({ from: FROM, to: 'a@rcpt.test', text: 'x' })
      .catch((x: unknown) => x as any);
    expect(anon.response).to.match(/^530 5\.7\.0 /);
    const n = count(e.s.db, 'emails');
    const unverified = await e
      .transport(e.live)
      .sendMail({ from: 'x@unverified.test', to: 'a@rcpt.test', text: 'x' })
      .catch((x: unknown) => x as any);
    expect(unverified.response).to.match(/^550 5\.7\.1 .*unverified\.test/);
    expect(count(e.s.db, 'emails'), 'nothing stored').to.equal(n);
  });

  it('refuses past 50 recipients (452 4.5.3) and past MTA_MAX_MESSAGE_BYTES (552 5.3.4)', async () => {
    const to = Array.from({ length: 51 }, (_, i) => `r${i}@rcpt.test`);
    const info = await e.transport(e.test).sendMail({ from: FROM, to, subject: 'many', text: 'x' });
    expect(info.rejected).to.deep.equal(['r50@rcpt.test']);
    expect((info as any).rejectedErrors[0].response).to.match(/^452 4\.5\.3 /);
    const n = count(e.s.db, 'emails');
    const huge = { filename: 'big.bin', content: randomBytes(5 * 1024 * 1024) };
    const big = await e
      .transport(e.test)
      .sendMail({ from: FROM, to: 'a@rcpt.test', text: 'x', attachments: [huge] })
      .catch((x: unknown) => x as any);
    expect(big.response).to.match(/^552 5\.3\.4 /);
    const raw = Buffer.concat([Buffer.from(`From: ${FROM}\r\n\r\n`), Buffer.alloc(7 * 1024 * 1024, 'a\r\n')]);
    const t = e.transport(e.test, { disableFileAccess: true });
    const undeclared = await t
      .sendMail({ envelope: { from: 'x@y.test', to: ['a@rcpt.test'] }, raw })
      .catch((x: unknown) => x as any);
    expect(undeclared.response).to.match(/^552 5\.3\.4 /);
    expect(count(e.s.db, 'emails')).to.equal(n);
  });
});
