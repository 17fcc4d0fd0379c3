import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { dkimVerify } from 'mailauth';
import { dkimSignature } from '../../src/outbound/dkim.js';
import { toOutcome, verdictOfReply } from '../../src/outbound/outcome.js';
import { simulate } from '../../src/outbound/simulate.js';
import { orderMx, isNullMx } from '../../src/outbound/mx.js';
import { mapSend } from '../../src/outbound/smtp.js';

const policy = { minSeconds: 60, maxSeconds: 3600, lifetimeSeconds: 48 * 3600 };
const info = { mx_host: 'mx.example.com', remote_ip: '192.0.2.1', duration_ms: 12, source: 'smtp' as const };
const d = (attempts = 0, first: number | null = null) => ({ id: 7, attempts, first_attempt_at: first });

describe('outbound: DKIM signer', () => {
  it('produces exactly what mailauth dkimSign produces (rsa-sha256 and ed25519)', async () => {
    const raw = await new MailComposer({
      from: 'A <a@example.com>',
      to: 'b@example.org',
      cc: 'c@example.org',
      subject: 'Hi  there',
      text: 'line 1  \r\n\r\n\r\n',
      html: '<p>x</p>',
      messageId: '<em_1@mta.test>',
      headers: { 'X-A': 'b' },
    })
      .compile()
      .build();
    const t = new Date('2025-01-01T00:00:00Z');
    for (const type of ['rsa', 'ed25519'] as const) {
      const { privateKey } =
        type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      const ours = await dkimSignature(raw, { signingDomain: 'example.com', selector: 's1', privateKey: pem }, t);
      const theirs = await dkimSign(raw, {
        signTime: t,
        signatureData: [{ signingDomain: 'example.com', selector: 's1', privateKey: pem }],
      });
      expect(ours).to.equal(theirs.signatures);
      expect(ours).to.match(
        new RegExp(`^DKIM-Signature: v=1; a=${type}-sha256; c=relaxed/relaxed;[\\s\\S]*d=example.com;[\\s\\S]*s=s1;`),
      );
    }
  });

  it('signs with one time even when the clock moves on while the signature is computed (t= stays the signed one)', async () => {
    const raw = await new MailComposer({ from: 'a@example.com', to: 'b@example.org', subject: 'x', text: 'y' })
      .compile()
      .build();
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const pub = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    // Every read of the clock is a second later than the one before: the canonicalised header and the header
    // written after the (asynchronous) signature used to take t= from two different readings.
    const realNow = Date.now;
    let now = realNow();
    Date.now = () => (now += 1000);
    let header: string;
    try {
      header = await dkimSignature(raw, { signingDomain: 'example.com', selector: 's1', privateKey: pem });
    } finally {
      Date.now = realNow;
    }
    const resolver = async () => [[`v=DKIM1; k=rsa; p=${pub}`]];
    const v = await dkimVerify(Buffer.concat([Buffer.from(header), raw]), { resolver: resolver as never });
    expect(v.results.map((r: { status: { result: string } }) => r.status.result)).to.deep.equal(['pass']);
  });

  it('rejects a key it cannot parse', async () => {
    const err = await dkimSignature(Buffer.from('A: b\r\n\r\nx'), {
      signingDomain: 'e.com',
      selector: 's',
      privateKey: 'nope',
    }).then(
      () => null,
      (e) => e,
    );
    expect(err).to.be.instanceOf(Error);
  });
});

describe('outbound: outcomes of an attempt', () => {
  it('maps reply classes: 2xx accepted, 4xx and no reply deferred, 5xx rejected', () => {
    expect(verdictOfReply('250 2.0.0 OK', 'DATA').kind).to.equal('accepted');
    expect(verdictOfReply('451 4.7.1 later', 'RCPT').kind).to.equal('deferred');
    expect(verdictOfReply('550 5.1.1 no such user', 'RCPT').kind).to.equal('rejected');
    expect(verdictOfReply(null, 'CONN', 'timed out').kind).to.equal('deferred');
    expect(verdictOfReply('HTTP/1.1 400 Bad Request', 'CONN').kind).to.equal('deferred');
  });

  it('classifies a rejection (hard userunknown) and fills the event data', () => {
    const o = toOutcome(
      d(),
      {
        kind: 'rejected',
        reply: '550 5.1.1 <x@example.org>: Recipient address rejected: User unknown',
        command: 'RCPT',
      },
      info,
      policy,
      1000,
      0.5,
    );
    expect(o.event).to.equal('rejected');
    expect(o.data).to.include({
      attempt: 1,
      smtp_code: 550,
      enhanced_status: '5.1.1',
      reason: 'userunknown',
      hard: true,
      mx_host: 'mx.example.com',
      source: 'smtp',
    });
  });

  it('schedules a deferral with backoff, and expires it after the queue lifetime', () => {
    const o = toOutcome(
      d(2, 0),
      { kind: 'deferred', reply: '421 4.7.0 Try again later', command: 'RCPT' },
      info,
      policy,
      10_000,
      0.5,
    );
    expect(o.event).to.equal('deferred');
    expect(o.nextAttemptAt).to.equal(10_000 + 240_000); // 60 s × 2² at the middle of the jitter
    expect(o.data).to.include({ attempt: 3, smtp_code: 421, hard: false });
    const late = toOutcome(
      d(30, 0),
      { kind: 'deferred', reply: null, command: 'CONN', error: 'connect ECONNREFUSED' },
      info,
      policy,
      48 * 3600 * 1000,
      0.5,
    );
    expect(late.event).to.equal('expired');
    expect(late.data).to.include({
      reason: 'expired',
      hard: false,
      enhanced_status: '4.4.7',
      last_reason: 'networkerror',
    });
  });

  it('DNS hard bounces and service failures', () => {
    expect(
      toOutcome(d(), { kind: 'dns_hard', reason: 'notaccept', enhanced: '5.1.10', text: 'null MX' }, info, policy, 0, 0)
        .data,
    ).to.include({ reason: 'notaccept', hard: true });
    const f = toOutcome(d(), { kind: 'failed', error: 'compose_failed', message: 'm' }, info, policy, 0, 0);
    expect(f.event).to.equal('failed');
  });
});

describe('outbound: test-mode simulation', () => {
  const r = (local: string, attempts = 0) =>
    simulate({ id: 1, attempts, first_attempt_at: null, recipient: `${local}@x.test` }, 0);
  it('decides by the local part', () => {
    expect(r('delivered').map((o) => o.event)).to.deep.equal(['accepted']);
    expect(r('Someone').map((o) => o.event)).to.deep.equal(['accepted']);
    expect(r('bounced')[0].data).to.include({ reason: 'userunknown', hard: true, source: 'simulated' });
    expect(r('complained').map((o) => o.event)).to.deep.equal(['accepted', 'complaint']);
    expect(r('delayed')[0]).to.include({ event: 'deferred', nextAttemptAt: 1000 });
    expect(r('delayed', 1).map((o) => o.event)).to.deep.equal(['accepted']);
  });
});

describe('outbound: MX order and nodemailer results', () => {
  it('orders by preference, shuffles equals, spots a null MX', () => {
    const recs = [
      { exchange: 'b.example.', priority: 20 },
      { exchange: 'a1.example', priority: 10 },
      { exchange: 'a2.example', priority: 10 },
    ];
    expect(orderMx(recs, () => 0.5).slice(2)).to.deep.equal(['b.example']);
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) seen.add(orderMx(recs)[0]);
    expect([...seen].sort()).to.deep.equal(['a1.example', 'a2.example']);
    expect(isNullMx([{ exchange: '', priority: 0 }])).to.equal(true);
    expect(isNullMx(recs)).to.equal(false);
  });

  it('reads per-recipient RCPT errors and the DATA reply', () => {
    const rej = Object.assign(new Error('x'), { recipient: 'b@x', response: '550 5.1.1 unknown', responseCode: 550 });
    const ok = mapSend(
      null,
      {
        accepted: ['a@x'],
        rejected: ['b@x'],
        rejectedErrors: [rej],
        response: '250 2.0.0 queued',
        envelopeTime: 1,
        messageTime: 1,
        messageSize: 1,
      } as any,
      ['a@x', 'b@x'],
    );
    expect(ok.verdicts.map((v) => v.kind)).to.deep.equal(['accepted', 'rejected']);
    expect(ok.healthy).to.equal(true);
    const drop = mapSend(
      Object.assign(new Error('Connection closed unexpectedly'), { code: 'ECONNECTION' }),
      undefined,
      ['a@x'],
    );
    expect(drop.verdicts[0].kind).to.equal('deferred');
    expect(drop.healthy).to.equal(false);
    const mail = mapSend(
      Object.assign(new Error('Mail command failed'), {
        code: 'EENVELOPE',
        command: 'MAIL FROM',
        response: '553 5.7.1 no',
      }),
      undefined,
      ['a@x', 'b@x'],
    );
    expect(mail.verdicts.map((v) => v.kind)).to.deep.equal(['rejected', 'rejected']);
  });
});
