// The inbound listener over real SMTP on loopback: RCPT policy (never a relay, forged VERP refused),
// SIZE and AUTH, and the effects of DSNs and ARF complaints on emails, deliveries and suppressions.
import fs from 'node:fs';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { cpuMsOf } from '../helpers/growth.js';
import { feature as inboundFeature } from '../../src/features/inbound.js';
import { tx } from '../../src/store/db.js';
import { secret } from '../../src/store/settings.js';
import { verpAddress } from '../../src/core/verp.js';
import { newId } from '../../src/core/ids.js';
import { emailByPublicId, deliveriesOf, type DeliveryRow, type EmailRow } from '../../src/store/emails.js';
import { getSuppression } from '../../src/store/suppressions.js';
import { runSync } from '../../src/store/op.js';
import { onEvent, type EventRow } from '../../src/store/events.js';
import { listInboundReports } from '../../src/store/inbound-reports.js';
import { applyOutcomesPlan } from '../../src/services/transition.js';
import { recordFeedback, PARSE_CAP } from '../../src/services/feedback.js';
import { smtpPort, smtpSend, ehlo, dialogue, buildDsn, buildArf } from './inbound-fixtures.js';

const BOUNCE = 'bounces.mta.test';

describe('inbound listener (bounces and complaints over SMTP)', function () {
  this.timeout(20_000);
  let s: TestService;
  let port: number;
  let teamId: string;
  let liveKey: string;
  const fired: EventRow[] = [];

  before(async () => {
    s = await startTestService({ features: [inboundFeature], env: { MTA_INBOUND_MAX_BYTES: '16384' } });
    port = smtpPort(s);
    teamId = s.team().id;
    liveKey = s.key(teamId, 'live');
    s.db
      .prepare(
        `INSERT INTO domains (id, team_id, name, status, created_at, return_path, return_path_verified)
      VALUES (?, ?, 'example.com', 'verified', ?, 'rp.example.com', 1)`,
      )
      .run(newId('dom', Date.now()), teamId, Date.now());
    onEvent(s.db, (_db, ev) => fired.push(ev));
  });
  after(() => s.close());

  const rnd = () => Math.random().toString(36).slice(2, 10);
  async function email(n = 1, key = liveKey): Promise<{ email: EmailRow; ds: DeliveryRow[] }> {
    const to = Array.from({ length: n }, (_, i) => `user${i}.${rnd()}@dest.test`);
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'news@example.com', to, subject: 'hi', text: 'x' },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    const e = runSync(emailByPublicId(s.db, r.body.id))!;
    return { email: e, ds: runSync(deliveriesOf(s.db, e.seq)) };
  }
  function deliver(e: EmailRow, ds: DeliveryRow[]) {
    tx(s.db, () =>
      runSync(
        applyOutcomesPlan(
          s.ctx,
          e.seq,
          ds.map((d) => ({ deliveryId: d.id, event: 'accepted' as const, data: { source: 'smtp' } })),
        ),
      ),
    );
  }
  const verp = (e: EmailRow, d: DeliveryRow, domain = BOUNCE) =>
    verpAddress(runSync(secret(s.db, 'verp')), e.id, d.id, domain);
  const events = (e: EmailRow) =>
    s.db.prepare('SELECT * FROM events WHERE email_seq = ? ORDER BY seq').all(e.seq) as EventRow[];
  const status = (e: EmailRow) => runSync(emailByPublicId(s.db, e.id))!.status;
  const reportCount = () => (s.db.prepare('SELECT count(*) AS n FROM inbound_reports').get() as { n: number }).n;

  it('greets with the hostname, advertises SIZE and STARTTLS, never AUTH', async () => {
    const { banner, lines } = await ehlo(port);
    expect(banner).to.match(/^220 mta\.test ESMTP/);
    expect(
      lines.some((l) => /^250[- ]SIZE 16384$/.test(l)),
      lines.join('|'),
    ).to.equal(true);
    expect(lines.some((l) => /STARTTLS/.test(l))).to.equal(true);
    expect(
      lines.some((l) => /AUTH/.test(l)),
      lines.join('|'),
    ).to.equal(false);
  });

  it('refuses to relay (550) and changes nothing', async () => {
    const before = reportCount();
    const r = await smtpSend(
      port,
      { from: 'spammer@evil.test', to: ['someone@gmail.com'] },
      'Subject: hi\r\n\r\nrelay me\r\n',
    );
    expect(r.ok).to.equal(false);
    expect(r.code).to.equal(550);
    const r2 = await smtpSend(
      port,
      { from: '', to: [`nobody@${BOUNCE}`, `bounces+nothing@${BOUNCE}`] },
      'Subject: x\r\n\r\nx\r\n',
    );
    expect(r2.code).to.equal(550);
    expect(reportCount()).to.equal(before);
  });

  it('a hard DSN to the VERP address bounces the named recipient asynchronously and suppresses it; twice is once', async () => {
    const { email: e, ds } = await email(2);
    deliver(e, ds);
    fired.length = 0;
    // Each recipient had its own transaction and token: the second one's DSN names it (case aside).
    const raw = buildDsn({
      to: verp(e, ds[1]),
      recipient: ds[1].recipient.toUpperCase(),
      status: '5.1.1',
      diagnostic: '550 5.1.1 <x>: Recipient address rejected: User unknown',
    });
    const r = await smtpSend(port, { from: '', to: [verp(e, ds[1])] }, raw);
    expect(r.ok, r.response).to.equal(true);
    const bounced = events(e).filter((ev) => ev.type === 'bounced');
    expect(bounced).to.have.length(1);
    expect(bounced[0].recipient).to.equal(ds[1].recipient);
    expect(JSON.parse(bounced[0].data_json)).to.include({
      async: true,
      reason: 'userunknown',
      hard: true,
      enhanced_status: '5.1.1',
      source: 'dsn',
    });
    expect(JSON.parse(bounced[0].data_json)).not.to.have.property('provider'); // mx.remote.test: no known provider
    expect(status(e)).to.equal('delivered');
    expect(runSync(getSuppression(s.db, teamId, ds[1].recipient.toLowerCase()))?.reason).to.equal('hard_bounce');
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))).to.equal(undefined);
    expect(fired.map((f) => f.type)).to.deep.equal(['bounced']); // webhooks hang off onEvent
    // The same report again, and the same bounce under a new report Message-ID: no second event.
    await smtpSend(port, { from: '', to: [verp(e, ds[1])] }, raw);
    await smtpSend(
      port,
      { from: '', to: [verp(e, ds[1])] },
      raw.replace(/^Message-ID: .*$/m, 'Message-ID: <other@mx.remote.test>'),
    );
    expect(events(e).filter((ev) => ev.type === 'bounced')).to.have.length(1);
    expect(runSync(listInboundReports(s.db, 'duplicate', 10)).filter((x) => x.email_id === e.id)).to.have.length(2);
  });

  it('a soft DSN adds an async bounced event without suppressing', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const raw = buildDsn({
      to: verp(e, ds[0]),
      recipient: ds[0].recipient,
      status: '5.2.2',
      diagnostic: '552-5.2.2 Mailbox full. https://support.google.com/mail/?p=OverQuotaPerm a1si.2 - gsmtp',
    });
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, raw)).ok).to.equal(true);
    const b = events(e)
      .filter((ev) => ev.type === 'bounced')
      .map((ev) => JSON.parse(ev.data_json));
    expect(b).to.have.length(1);
    expect(b[0]).to.include({ async: true, reason: 'mailboxfull', hard: false, provider: 'google' });
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))).to.equal(undefined);
    expect(status(e)).to.equal('delivered');
  });

  it('a complaint (ARF) to fbl@ whose returned message carries the VERP Return-Path moves the email to complained and suppresses', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const raw = buildArf({
      to: `fbl@${BOUNCE}`,
      recipient: ds[0].recipient,
      originalMessageId: `<${e.id}@mta.test>`,
      originalReturnPath: verp(e, ds[0]),
    });
    const r = await smtpSend(port, { from: 'fbl@provider.test', to: [`fbl@${BOUNCE}`] }, raw);
    expect(r.ok, r.response).to.equal(true);
    expect(status(e)).to.equal('complained');
    const c = events(e).filter((ev) => ev.type === 'complained' && ev.recipient);
    expect(c).to.have.length(1);
    expect(JSON.parse(c[0].data_json)).to.include({ source: 'arf', reason: 'feedback', feedback_type: 'abuse' });
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))?.reason).to.equal('complaint');
    expect(runSync(listInboundReports(s.db, null, 1))[0]).to.include({
      kind: 'arf',
      outcome: 'applied',
      matched_by: 'return_path',
      email_id: e.id,
    });
  });

  it('refuses a forged VERP token at RCPT and changes nothing', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const good = verp(e, ds[0]);
    const forged = good.replace(
      /-([0-9a-f]+)@/,
      (_m, mac: string) => `-${mac.slice(0, -1)}${mac.endsWith('0') ? '1' : '0'}@`,
    );
    const before = reportCount();
    const raw = buildDsn({ to: forged, recipient: ds[0].recipient });
    const r = await smtpSend(port, { from: '', to: [forged] }, raw);
    expect(r.code).to.equal(550);
    // A valid token on a domain that is not a bounce domain is no better.
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0], 'elsewhere.test')] }, raw)).code).to.equal(550);
    expect(reportCount()).to.equal(before);
    expect(events(e).filter((ev) => ev.type === 'bounced')).to.have.length(0);
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))).to.equal(undefined);
  });

  it("accepts VERP addresses on a team domain's return-path name", async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const to = verp(e, ds[0], 'rp.example.com');
    const r = await smtpSend(
      port,
      { from: '', to: [to] },
      buildDsn({ to, recipient: ds[0].recipient, status: '5.1.1' }),
    );
    expect(r.ok, r.response).to.equal(true);
    expect(events(e).filter((ev) => ev.type === 'bounced')).to.have.length(1);
  });

  it('refuses oversize messages with 552, by SIZE and by streamed bytes', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const before = reportCount();
    const big =
      buildDsn({ to: verp(e, ds[0]), recipient: ds[0].recipient }) + 'X'.repeat(76).concat('\r\n').repeat(400);
    // nodemailer itself refuses to announce more than the advertised SIZE, so speak SMTP directly.
    const bySize = await dialogue(port, ['EHLO mx.remote.test', `MAIL FROM:<> SIZE=${big.length}`, 'QUIT']);
    expect(bySize[1]).to.match(/^552 /);
    const streamed = await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, big);
    expect(streamed.code, streamed.response).to.equal(552);
    expect(reportCount()).to.equal(before);
    expect(events(e).filter((ev) => ev.type === 'bounced')).to.have.length(0);
  });

  it('stores garbage sent to a valid VERP address as unmatched and stays healthy', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const n = events(e).length;
    const garbage = 'Subject: buy now\r\nFrom: x@y.test\r\n\r\n\x00\x01 not a report at all\r\n';
    const r = await smtpSend(port, { from: 'x@y.test', to: [verp(e, ds[0])] }, garbage);
    expect(r.ok, r.response).to.equal(true);
    const stored = runSync(listInboundReports(s.db, null, 1))[0];
    expect(stored).to.include({
      kind: 'other',
      outcome: 'unmatched',
      email_id: e.id,
      matched_by: 'rcpt',
      mail_from: 'x@y.test',
    });
    expect(stored.raw?.toString('latin1')).to.include('not a report at all');
    expect(events(e)).to.have.length(n);
    expect(status(e)).to.equal('delivered');
    expect((await s.api('GET', '/healthz')).status).to.equal(200);
  });

  it('matches a DSN that arrives at fbl@ by the VERP address it carries (Original-Mail-From)', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const raw = buildDsn({ to: `fbl@${BOUNCE}`, recipient: ds[0].recipient, originalMailFrom: verp(e, ds[0]) });
    expect((await smtpSend(port, { from: '', to: [`fbl@${BOUNCE}`] }, raw)).ok).to.equal(true);
    expect(events(e).filter((ev) => ev.type === 'bounced')).to.have.length(1);
    expect(runSync(listInboundReports(s.db, null, 1))[0]).to.include({ outcome: 'applied', matched_by: 'return_path' });
  });

  it('a failed DSN for a recipient still in flight bounces it (rejected)', async () => {
    const { email: e, ds } = await email(1);
    const raw = buildDsn({ to: verp(e, ds[0]), recipient: ds[0].recipient, status: '5.1.1' });
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, raw)).ok).to.equal(true);
    expect(status(e)).to.equal('bounced');
    expect(JSON.parse(events(e).find((ev) => ev.type === 'bounced' && ev.recipient)!.data_json)).to.include({
      async: false,
      hard: true,
    });
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))?.reason).to.equal('hard_bounce');
  });

  it('a delayed DSN changes nothing; one naming an address the email does not have never suppresses', async () => {
    const { email: e, ds } = await email(2);
    deliver(e, ds);
    const n = events(e).length;
    const delayed = buildDsn({
      to: verp(e, ds[0]),
      recipient: ds[0].recipient,
      action: 'delayed',
      status: '4.4.7',
      diagnostic: '451 4.4.7 still trying',
    });
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, delayed)).ok).to.equal(true);
    expect(runSync(listInboundReports(s.db, null, 1))[0].outcome).to.equal('ignored');
    expect(events(e)).to.have.length(n);
    // The token names ds[0]: a failure of some other address (a forward target) is recorded there, soft.
    const stranger = buildDsn({ to: verp(e, ds[0]), recipient: 'stranger@dest.test' });
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, stranger)).ok).to.equal(true);
    const b = events(e).slice(n);
    expect(b.map((ev) => [ev.type, ev.recipient])).to.deep.equal([['bounced', ds[0].recipient]]);
    expect(JSON.parse(b[0].data_json)).to.include({ hard: false, final_recipient: 'stranger@dest.test' });
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))).to.equal(undefined);
  });

  it('a real-world DSN naming another address (a forward target) is recorded on the one recipient without suppressing it', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const corpus = fs.readFileSync(new URL('../fixtures/corpus/rfc3464-03.eml', import.meta.url));
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, corpus)).ok).to.equal(true);
    const b = events(e)
      .filter((ev) => ev.type === 'bounced')
      .map((ev) => JSON.parse(ev.data_json));
    expect(b).to.have.length(1);
    expect(b[0]).to.include({ async: true, hard: false, final_recipient: 'kijitora@example.com', source: 'dsn' });
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))).to.equal(undefined);
    expect(runSync(listInboundReports(s.db, null, 1))[0]).to.include({
      kind: 'dsn',
      outcome: 'applied',
      matched_by: 'rcpt',
    });
  });

  it('reads a report whose returned message is megabytes long (parsing stops at PARSE_CAP) quickly', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const body = 'Lorem ipsum dolor sit amet user@example.com 550 5.1.1\r\n'.repeat(60_000);
    const raw = Buffer.from(
      buildDsn({
        to: `fbl@${BOUNCE}`,
        recipient: ds[0].recipient,
        originalMailFrom: verp(e, ds[0]),
        originalMessageId: `<${e.id}@mta.test>`,
        body,
      }),
    );
    expect(raw.length).to.be.greaterThan(3 * PARSE_CAP);
    // CPU time (the parse runs on this thread), not wall time, which the parallel test phase stretches.
    const { ms, value: r } = await cpuMsOf(() =>
      recordFeedback(s.ctx, raw, { mailFrom: null, rcptTo: [`fbl@${BOUNCE}`], remoteIp: '127.0.0.1' }),
    );
    expect(ms, 'CPU ms').to.be.lessThan(1500);
    expect(r).to.include({ kind: 'dsn', outcome: 'applied', emailId: e.id });
    expect(events(e).filter((ev) => ev.type === 'bounced')).to.have.length(1);
  });

  it('a hard bounce of a test-mode email never suppresses', async () => {
    const { email: e, ds } = await email(1, s.key(teamId, 'test'));
    deliver(e, ds);
    const raw = buildDsn({ to: verp(e, ds[0]), recipient: ds[0].recipient, status: '5.1.1' });
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, raw)).ok).to.equal(true);
    expect(events(e).filter((ev) => ev.type === 'bounced')).to.have.length(1);
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))).to.equal(undefined);
  });

  // A notice is read as Sisimai 5.1.0 reads it (docs/inbound.md "Session 22: audit against Sisimai"): its phrase lists
  // know no German, so "550 Benutzer unbekannt" in a notice is `onhold`, soft, and suppresses nothing. The same reply
  // met live, at RCPT (src/core/reply-rules-live.ts), reads userunknown and suppresses then.
  it('a German text notice (no DSN part, no enhanced status) names its recipient in a sentence: a bounce of that recipient, onhold as Sisimai reads it, no suppression', async () => {
    const { email: e, ds } = await email(1);
    deliver(e, ds);
    const raw = [
      'From: Mail-Server <postmaster@mx.remote.test>',
      `To: ${verp(e, ds[0])}`,
      'Subject: Unzustellbar',
      'Message-ID: <de-notice-1@mx.remote.test>',
      'Date: Thu, 17 Jul 2025 23:34:45 +0000',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      `Ihre Nachricht an <${ds[0].recipient}> konnte nicht zugestellt werden.`,
      'mx.remote.test antwortete: 550 Benutzer unbekannt (in reply to RCPT TO command)',
      '',
      '------ Original message follows ------',
      '',
      'From: news@example.com',
      'Subject: hi',
      '',
      'x',
      '',
    ].join('\r\n');
    expect((await smtpSend(port, { from: '', to: [verp(e, ds[0])] }, raw)).ok).to.equal(true);
    const b = events(e).filter((ev) => ev.type === 'bounced');
    expect(b.map((ev) => ev.recipient)).to.deep.equal([ds[0].recipient]);
    const data = JSON.parse(b[0].data_json);
    expect(data).to.include({ async: true, reason: 'onhold', hard: false, source: 'dsn' });
    expect(data).not.to.have.property('final_recipient'); // the notice named this very recipient
    expect(runSync(getSuppression(s.db, teamId, ds[0].recipient.toLowerCase()))).to.equal(undefined);
  });
});
