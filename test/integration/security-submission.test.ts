// Issue 32 item 3, through the real submission listener: From and Sender are read with the API's strict parser
// (a display name holding an unquoted address, two mailboxes: refused), Resent-* is refused 550 5.7.1, and a
// client's Return-Path never reaches the recipient's MX. Clients: nodemailer and Python's smtplib.
import { expect } from 'chai';
import { SENDER } from './outbound-env.js';
import { runPython, submissionEnv, waitFor, type SubmissionEnv } from './submission-env.js';
import { count } from '../helpers/factories.js';

/** Sends the message in argv[3] (headers and body, LF line ends) with smtplib; prints the DATA reply as JSON. */
const SCRIPT = `
import json, smtplib, ssl, sys
port, key, raw, rcpt = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
with smtplib.SMTP('127.0.0.1', port, timeout=30) as s:
    s.starttls(context=ctx)
    s.login('apikey', key)
    s.mail('bounce@${SENDER}')
    s.rcpt(rcpt)
    try:
        code, text = s.data(raw.replace('\\n', '\\r\\n').encode())
    except smtplib.SMTPDataError as e:
        code, text = e.smtp_code, e.smtp_error
    print(json.dumps({'code': code, 'text': text.decode()}))
`;

const python = (port: number, key: string, raw: string, rcpt: string) =>
  runPython<{ code: number; text: string }>(SCRIPT, [String(port), key, raw, rcpt]);

/** What Python's strict header parser (email.policy.default) reads as the addresses of a header. */
const ADDRESSES = `
import json, sys
from email import message_from_bytes, policy
m = message_from_bytes(sys.stdin.buffer.read(), policy=policy.default)
h = m[sys.argv[1]]
print(json.dumps([a.addr_spec for a in h.addresses] if h is not None else []))
`;
const pythonAddresses = (raw: Buffer, header: string) => runPython<string[]>(ADDRESSES, [header], raw);

describe('security: SMTP submission reads From and Sender strictly (issue 32, item 3)', function () {
  this.timeout(40_000);
  let e: SubmissionEnv;
  before(async () => {
    e = await submissionEnv();
  });
  after(() => e.close());

  const message = (headers: string, rcpt: string) =>
    `${headers}\nTo: ${rcpt}\nSubject: hello\nMessage-ID: <${rcpt.split('@')[0]}@app.test>\n\nHi there\n`;

  /** Sends a raw message with nodemailer; the error (with its SMTP response) or the info. */
  const sendRaw = (raw: string, rcpt: string, key = e.live) =>
    e
      .transport(key)
      .sendMail({ envelope: { from: `bounce@${SENDER}`, to: [rcpt] }, raw: raw.replace(/\n/g, '\r\n') })
      .catch((x: unknown) => x as { response: string; responseCode: number });

  it('refuses a From whose display name is an unquoted address (what strict parsers read as the sender)', async () => {
    const spoof = `From: security@paypal.com <a@${SENDER}>`;
    // What a strict reader makes of that header: the From address is paypal's.
    expect(await pythonAddresses(Buffer.from(`${spoof}\r\n\r\nx\r\n`), 'From')).to.include('security@paypal.com');
    const n = count(e.s.db, 'emails');
    const r = await python(e.port, e.live, message(spoof, 'spoof1@rcpt.test'), 'spoof1@rcpt.test');
    expect(r.code, r.text).to.equal(550);
    expect(r.text).to.match(/^5\.7\.1 .*From.*unquoted "@"/);
    const viaNodemailer = await sendRaw(message(spoof, 'spoof2@rcpt.test'), 'spoof2@rcpt.test');
    expect(viaNodemailer.response).to.match(/^550 5\.7\.1 /);
    // A test key is refused the same way: the parser does not depend on the mode.
    const viaTest = await sendRaw(message(spoof, 'spoof3@rcpt.test'), 'spoof3@rcpt.test', e.test);
    expect(viaTest.response).to.match(/^550 5\.7\.1 /);
    expect(count(e.s.db, 'emails'), 'nothing stored').to.equal(n);
    await new Promise((r) => setTimeout(r, 300));
    expect(e.mx.messages.filter((m) => m.to.some((t) => t.startsWith('spoof')))).to.have.length(0);
  });

  it('refuses a From with two mailboxes or a group, and two From headers', async () => {
    const n = count(e.s.db, 'emails');
    for (const from of [
      `From: a@${SENDER}, ceo@paypal.com`,
      `From: Team: a@${SENDER};`,
      `From: "Ops" <ceo@paypal.com> <a@${SENDER}>`,
      `From: a@${SENDER}\nFrom: ceo@paypal.com`,
    ]) {
      const r = await sendRaw(message(from, 'two@rcpt.test'), 'two@rcpt.test');
      expect(r.response, from).to.match(/^550 5\.7\.1 /);
    }
    expect(count(e.s.db, 'emails'), 'nothing stored').to.equal(n);
  });

  it('refuses a Sender with two mailboxes, a spoofing display name, or a domain the team has not verified', async () => {
    const n = count(e.s.db, 'emails');
    for (const sender of [
      `Sender: ops@${SENDER}, ceo@paypal.com`,
      `Sender: security@paypal.com <ops@${SENDER}>`,
      `Sender: ops@${SENDER}\nSender: ceo@paypal.com`,
    ]) {
      const r = await python(e.port, e.live, message(`From: a@${SENDER}\n${sender}`, 'snd@rcpt.test'), 'snd@rcpt.test');
      expect(`${r.code} ${r.text}`, sender).to.match(/^550 5\.7\.1 .*Sender/);
    }
    const foreign = await sendRaw(
      message(`From: a@${SENDER}\nSender: ceo@paypal.com`, 'snd@rcpt.test'),
      'snd@rcpt.test',
    );
    expect(foreign.response).to.match(/^550 5\.7\.1 .*paypal\.com/);
    expect(count(e.s.db, 'emails'), 'nothing stored').to.equal(n);
  });

  it("the HTTP API refuses a live email's Sender header of an unverified domain the same way", async () => {
    const send = (key: string, sender: string) =>
      e.s.api('POST', '/v1/emails', {
        key,
        body: { from: `a@${SENDER}`, to: 'api@rcpt.test', subject: 's', text: 't', headers: { Sender: sender } },
      });
    const r = await send(e.live, 'ceo@paypal.com');
    expect(r.status).to.equal(422);
    expect(r.body.error).to.include({ code: 'domain_not_verified', param: 'headers' });
    expect((await send(e.live, `Ops <ops@${SENDER}>`)).status).to.equal(202);
    expect((await send(e.test, 'ceo@paypal.com')).status, 'a test key sends nothing: no domain rule').to.equal(202);
  });

  it('delivers a quoted display name and a Sender of a verified domain as written', async () => {
    const headers = `From: "security@paypal.com" <a@${SENDER}>\nSender: Ops <ops@${SENDER}>`;
    const r = await python(e.port, e.live, message(headers, 'ok@rcpt.test'), 'ok@rcpt.test');
    expect(r.code, r.text).to.equal(250);
    const m = await waitFor('the message at the MX', () => e.mx.to('ok@rcpt.test')[0]);
    expect(await pythonAddresses(m.raw, 'From')).to.deep.equal([`a@${SENDER}`]);
    expect(await pythonAddresses(m.raw, 'Sender')).to.deep.equal([`ops@${SENDER}`]);
  });

  it('refuses any Resent-* header with 550 5.7.1', async () => {
    const n = count(e.s.db, 'emails');
    for (const resent of [
      'Resent-From: ceo@paypal.com',
      `Resent-Sender: a@${SENDER}`,
      'Resent-Date: Mon, 1 Jan 2024',
    ]) {
      const r = await python(e.port, e.live, message(`From: a@${SENDER}\n${resent}`, 'rs@rcpt.test'), 'rs@rcpt.test');
      expect(r.code, `${resent}: ${r.text}`).to.equal(550);
      expect(r.text).to.match(/^5\.7\.1 .*Resent/);
    }
    expect(count(e.s.db, 'emails'), 'nothing stored').to.equal(n);
  });

  it("drops a client's Return-Path: the recipient's MX sees none from the client", async () => {
    const headers = `Return-Path: <ceo@paypal.com>\nFrom: a@${SENDER}`;
    const r = await python(e.port, e.live, message(headers, 'rp@rcpt.test'), 'rp@rcpt.test');
    expect(r.code, r.text).to.equal(250);
    const m = await waitFor('the message at the MX', () => e.mx.to('rp@rcpt.test')[0]);
    expect(m.raw.toString('latin1')).not.to.match(/^Return-Path:/im);
    expect(m.raw.toString('latin1')).not.to.include('ceo@paypal.com');
    expect(m.from, 'the envelope sender is the VERP return path').to.match(/^bounces\+/);
  });
});
