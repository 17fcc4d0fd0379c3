// Content retention (issue 32) through the running service: a live email delivered to the loopback MX, a test
// email, a scheduled (not final) one; the clock moved past MTA_TEST_CONTENT_RETENTION_HOURS (default 24) and then
// MTA_CONTENT_RETENTION_DAYS (2 here), the retention pass run as the hourly job runs it. Content goes, the Email
// object, its events and attachment list stay; a non-final email keeps everything.
import { expect } from 'chai';
import { testClock } from '../helpers/service.js';
import { outboundEnv, type OutboundEnv } from './outbound-env.js';
import { smtpPort, smtpSend, buildDsn } from './inbound-fixtures.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as inbound } from '../../src/features/inbound.js';
import { runRetention } from '../../src/services/retention.js';
import { verpAddress } from '../../src/core/verp.js';
import { secret } from '../../src/store/settings.js';
import { emailByPublicId, deliveriesOf } from '../../src/store/emails.js';
import { runSync } from '../../src/store/op.js';

const HOUR = 3600e3;

describe('content retention: bodies, attachments and raw reports deleted after the email is final', function () {
  this.timeout(30_000);
  const clock = testClock();
  let env: OutboundEnv;
  before(async () => {
    env = await outboundEnv({
      now: clock.now,
      features: [outbound, inbound],
      env: { MTA_CONTENT_RETENTION_DAYS: '2' },
    });
  });
  after(() => env.close());

  const attachment = { filename: 'report.txt', content: Buffer.from('secret figures').toString('base64') };
  const body = { html: '<p>Hi there</p>', text: 'Hi there', attachments: [attachment] };
  /** What the store holds of an email's content. */
  function content(id: string) {
    const e = runSync(emailByPublicId(env.s.db, id))!;
    const n = (t: string) =>
      env.s.db.prepare(`SELECT count(*) AS n FROM ${t} WHERE email_seq = ?`).get(e.seq) as { n: number };
    const raw = env.s.db
      .prepare('SELECT count(*) AS n FROM inbound_reports WHERE email_seq = ? AND raw IS NOT NULL')
      .get(e.seq) as { n: number };
    return { html: e.html, text: e.text, attachments: Number(n('email_attachments').n), raw_reports: Number(raw.n) };
  }
  const get = async (id: string, key = env.live) => (await env.s.api('GET', `/v1/emails/${id}`, { key })).body;

  it('deletes test content after 24 hours and live content after MTA_CONTENT_RETENTION_DAYS; metadata and events stay', async () => {
    const live = await env.send({ to: 'someone@rcpt.test', ...body });
    const test = await env.send({ to: 'someone@rcpt.test', ...body }, env.test);
    const later = new Date(clock.now() + 29 * 24 * HOUR).toISOString();
    const waiting = await env.send({ to: 'later@rcpt.test', ...body, scheduled_at: later });
    await env.waitStatus(live.id, ['delivered']);
    await env.waitStatus(test.id, ['delivered'], 8000, env.test);
    expect(env.mx.to('someone@rcpt.test')).to.have.length(1);
    // A delayed-delivery notice about the live email changes nothing: its raw copy is kept (until the retention).
    const e = runSync(emailByPublicId(env.s.db, live.id))!;
    const verp = verpAddress(
      runSync(secret(env.s.db, 'verp')),
      e.id,
      runSync(deliveriesOf(env.s.db, e.seq))[0].id,
      env.s.ctx.config.bounceDomain,
    );
    const r = await smtpSend(
      smtpPort(env.s),
      { from: '', to: [verp] },
      buildDsn({
        to: verp,
        recipient: 'someone@rcpt.test',
        action: 'delayed',
        status: '4.2.2',
        diagnostic: '452 4.2.2 mailbox full',
      }),
    );
    expect(r.ok, r.response).to.equal(true);
    const kept = { html: '<p>Hi there</p>', text: 'Hi there', attachments: 1, raw_reports: 0 };
    expect(content(live.id)).to.deep.equal({ ...kept, raw_reports: 1 });
    const events = (await env.events(live.id)).map((x) => x.type);
    const testEvents = (await env.events(test.id, env.test)).map((x) => x.type);

    clock.advance(23 * HOUR);
    expect(await runRetention(env.s.ctx)).to.include({ content: 0, test_content: 0 });
    expect(content(test.id)).to.deep.equal(kept);

    clock.advance(2 * HOUR); // 25 h: the test email's content goes, the live one's stays
    let at = clock.now();
    expect(await runRetention(env.s.ctx)).to.include({ content: 0, test_content: 1 });
    const t = await get(test.id, env.test);
    expect(content(test.id)).to.deep.equal({ html: null, text: null, attachments: 0, raw_reports: 0 });
    expect(t).to.include({ status: 'delivered', subject: 'Hello', test_mode: true });
    expect(Date.parse(t.content_expired_at)).to.be.within(at, clock.now());
    expect(t.attachments).to.deep.equal([{ filename: 'report.txt', content_type: 'text/plain', size: 14 }]);
    expect((await env.events(test.id, env.test)).map((x) => x.type)).to.deep.equal(testEvents);
    expect((await get(live.id)).content_expired_at).to.equal(null);
    expect(content(live.id)).to.deep.equal({ ...kept, raw_reports: 1 });

    clock.advance(24 * HOUR); // 49 h: the live email's too; the scheduled one is not final and keeps everything
    at = clock.now();
    expect(await runRetention(env.s.ctx)).to.include({ content: 1, test_content: 0 });
    const l = await get(live.id);
    expect(l).to.include({ status: 'delivered', from: 'Sender <app@sender.test>' });
    expect(Date.parse(l.content_expired_at)).to.be.within(at, clock.now());
    expect(l.attachments).to.deep.equal([{ filename: 'report.txt', content_type: 'text/plain', size: 14 }]);
    expect(content(live.id)).to.deep.equal({ html: null, text: null, attachments: 0, raw_reports: 0 });
    expect((await env.events(live.id)).map((x) => x.type)).to.deep.equal(events);
    expect(await get(waiting.id)).to.include({ status: 'queued', content_expired_at: null });
    expect(content(waiting.id)).to.deep.equal(kept);
    // Nothing more to do: a second pass finds nothing.
    expect(await runRetention(env.s.ctx)).to.include({ content: 0, test_content: 0 });
  });
});
