// Audit finding 2: a display name cannot smuggle another address past domain verification. Each hostile
// form is refused through the real API with a live key; accepted forms reach a loopback MX with exactly
// the validated mailboxes in From/To/Cc/Reply-To/Sender, and the DKIM domain is the From address's.
import { expect } from 'chai';
import { simpleParser, type AddressObject } from 'mailparser';
import { outboundEnv, SENDER, type OutboundEnv } from './outbound-env.js';
import { emailByPublicId } from '../../src/store/emails.js';
import { prepareEmail } from '../../src/outbound/compose.js';
import { count } from '../helpers/factories.js';
import { runSync } from '../../src/store/op.js';

const mailboxes = (a: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((x) => x.value).map((v) => ({ name: v.name, address: v.address }));

describe('security: one validated mailbox per address field, exactly as it leaves', function () {
  this.timeout(20_000);
  let e: OutboundEnv;
  before(async () => {
    e = await outboundEnv();
  });
  after(() => e.close());

  const post = (body: Record<string, unknown>) =>
    e.s.api('POST', '/v1/emails', {
      key: e.live,
      body: { from: `app@${SENDER}`, to: 'r4@rcpt.test', subject: 'Hi', text: 'x', ...body },
    });

  const HOSTILE: [string, Record<string, unknown>][] = [
    ['from', { from: `Boss <ceo@paypal.com> <app@${SENDER}>` }],
    ['from', { from: `a <ceo@paypal.com>, app@${SENDER}` }],
    ['from', { from: `ceo@paypal.com <app@${SENDER}>` }],
    ['from', { from: `Boss <app@${SENDER}> ceo@paypal.com` }],
    ['from', { from: `grp: app@${SENDER};` }],
    ['from', { from: `Boss; x <app@${SENDER}>` }],
    ['to', { to: 'Nm r4@rcpt.test <v3@victim.test>' }],
    ['to', { to: ['ok@rcpt.test', 'Nm <v3@victim.test> <r4@rcpt.test>'] }],
    ['cc', { cc: ['Nm r4@rcpt.test <v3@victim.test>'] }],
    ['cc', { cc: ['a@rcpt.test, b@victim.test'] }],
    ['bcc', { bcc: ['undisclosed: r4@rcpt.test;'] }],
    ['reply_to', { reply_to: 'Help <help@victim.test>, x@rcpt.test' }],
    ['headers', { headers: { Sender: 'Ops <ceo@paypal.com> <ops@sender.test>' } }],
    ['headers', { headers: { 'Reply-To': 'a@rcpt.test, b@victim.test' } }],
  ];

  it('refuses every hostile form with 422 invalid_address naming the field, storing nothing', async () => {
    const before = count(e.s.db, 'emails');
    for (const [param, body] of HOSTILE) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body)).to.equal(422);
      expect(r.body.error, JSON.stringify(body)).to.include({
        type: 'validation_error',
        code: 'invalid_address',
        param,
      });
    }
    expect(count(e.s.db, 'emails')).to.equal(before);
    expect(e.mx.messages).to.have.length(0);
  });

  it('sends quoted display names with specials exactly as validated, DKIM-signed for the From domain', async () => {
    const r = await post({
      from: `"Boss <ceo@paypal.com>, Inc." <App@${SENDER.toUpperCase()}>`,
      to: ['"Nm r4@rcpt.test" <r4@rcpt.test>', 'Ann Lee <ann@rcpt.test>'],
      cc: ['"Doe; J: (x)" <cc@other.test>', 'plain@other.test'],
      bcc: ['"Hidden, B" <hid@rcpt.test>'],
      reply_to: '"Help: desk" <help@sender.test>',
      headers: { Sender: 'Zoë Ops <ops@sender.test>' },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.from).to.equal(`"Boss <ceo@paypal.com>, Inc." <App@${SENDER.toUpperCase()}>`); // presented as submitted
    await e.waitStatus(r.body.id, ['delivered']);
    expect(e.mx.messages.length).to.be.greaterThan(0);
    for (const m of e.mx.messages) {
      const p = await simpleParser(m.raw);
      expect(mailboxes(p.from)).to.deep.equal([{ name: 'Boss <ceo@paypal.com>, Inc.', address: `App@${SENDER}` }]);
      expect(mailboxes(p.to)).to.deep.equal([
        { name: 'Nm r4@rcpt.test', address: 'r4@rcpt.test' },
        { name: 'Ann Lee', address: 'ann@rcpt.test' },
      ]);
      expect(mailboxes(p.cc)).to.deep.equal([
        { name: 'Doe; J: (x)', address: 'cc@other.test' },
        { name: '', address: 'plain@other.test' },
      ]);
      expect(mailboxes(p.replyTo)).to.deep.equal([{ name: 'Help: desk', address: 'help@sender.test' }]);
      expect(p.headers.get('sender')).to.deep.include({ value: [{ name: 'Zoë Ops', address: 'ops@sender.test' }] });
      expect(p.bcc).to.equal(undefined);
      const head = m.raw.toString().split('\r\n\r\n')[0];
      expect(head.match(/^From:/gim)).to.have.length(1);
      expect(head).to.match(new RegExp(`^DKIM-Signature:[^]*?\\bd=${SENDER.replace('.', '\\.')};`, 'm'));
    }
    expect(e.mx.messages.flatMap((m) => m.to).sort()).to.deep.equal([
      'ann@rcpt.test',
      'cc@other.test',
      'hid@rcpt.test',
      'plain@other.test',
      'r4@rcpt.test',
    ]);
  });

  it('still presents an email stored before this check, and refuses to compose it if it is hostile', async () => {
    const r = await e.s.api('POST', '/v1/emails', {
      key: e.test,
      body: { from: `app@${SENDER}`, to: 'x@rcpt.test', subject: 's', text: 't' },
    });
    const legacy = `Boss <ceo@paypal.com> <app@${SENDER}>`;
    e.s.db.prepare('UPDATE emails SET from_addr = ? WHERE id = ?').run(legacy, r.body.id);
    const got = await e.s.api('GET', `/v1/emails/${r.body.id}`, { key: e.test });
    expect(got.status).to.equal(200);
    expect(got.body.from).to.equal(legacy);
    const prepared = await prepareEmail(e.s.ctx, runSync(emailByPublicId(e.s.db, r.body.id))!);
    expect(prepared).to.deep.include({ ok: false, error: 'compose_failed' });
  });
});
