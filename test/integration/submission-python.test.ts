// SMTP submission from Python's smtplib (STARTTLS with the self-signed certificate, AUTH PLAIN with the API key):
// plain, HTML+text, a 3 MB attachment and an inline image; the loopback MX gets every part byte-identical, DKIM-valid,
// without the Bcc header; a wrong key gets 535.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import { SENDER } from './outbound-env.js';
import { tempDir } from '../helpers/temp.js';
import {
  submissionEnv,
  bodyOf,
  expectDkimPass,
  runPython,
  sha,
  waitFor,
  type SubmissionEnv,
} from './submission-env.js';

/** Builds the message (email.message), sends it with STARTTLS + AUTH PLAIN, prints the DATA reply as JSON. */
const SCRIPT = `
import json, smtplib, ssl, sys
from email.message import EmailMessage
port, key, kind, out = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
msg = EmailMessage()
msg['From'] = 'Py App <py@${SENDER}>'
msg['To'] = 'pat@rcpt.test'
msg['Bcc'] = 'secret@rcpt.test'
msg['Subject'] = 'From Python: ' + kind
msg.set_content('Plain part from Python')
if kind != 'plain':
    msg.add_alternative('<p>HTML part <img src="cid:logo@py"></p>', subtype='html')
    msg.get_payload()[1].add_related(open(out + '.png', 'rb').read(), 'image', 'png', cid='<logo@py>', filename='logo.png')
    msg.add_attachment(open(out + '.bin', 'rb').read(), maintype='application', subtype='octet-stream', filename='big.bin')
data = msg.as_bytes(policy=msg.policy.clone(linesep='\\r\\n'))
open(out + '.eml', 'wb').write(data)
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
with smtplib.SMTP('127.0.0.1', port, timeout=30) as s:
    s.starttls(context=ctx)
    try:
        s.login('apikey', key)
    except smtplib.SMTPAuthenticationError as e:
        print(json.dumps({'code': e.smtp_code, 'text': e.smtp_error.decode()})); sys.exit(0)
    s.mail('bounce@${SENDER}')
    for r in ['pat@rcpt.test', 'secret@rcpt.test']:
        s.rcpt(r)
    code, text = s.data(data)
    print(json.dumps({'code': code, 'text': text.decode()}))
`;

const python = (args: string[]) => runPython<{ code: number; text: string }>(SCRIPT, args);

describe('SMTP submission (Python smtplib)', function () {
  this.timeout(40_000);
  let e: SubmissionEnv;
  let dir: string;
  before(async () => {
    e = await submissionEnv();
    dir = tempDir('mta-py-');
  });
  after(() => e.close());

  async function send(kind: string, key = e.live) {
    const out = path.join(dir, kind);
    fs.writeFileSync(`${out}.bin`, Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 7919) % 256)));
    fs.writeFileSync(`${out}.png`, Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 31) % 256)));
    return { reply: await python([String(e.port), key, kind, out]), out };
  }

  for (const kind of ['plain', 'rich']) {
    it(`delivers a ${kind} message: every part byte-identical, DKIM-valid, Bcc absent`, async () => {
      const { reply, out } = await send(kind);
      expect(reply.code, reply.text).to.equal(250);
      const id = /^2\.0\.0 Ok: queued as (em_\w+)$/.exec(reply.text)?.[1];
      expect(id, reply.text).to.be.a('string');
      await e.waitStatus(id!, ['delivered'], 15_000);
      const subject = `From Python: ${kind}`;
      const got = await waitFor('the message at the MX', () =>
        e.mx.messages.find((m) => m.to.includes('pat@rcpt.test') && m.raw.toString().includes(subject)),
      );
      expect(got.raw.toString()).not.to.match(/^bcc:/im);
      expect(got.raw.toString()).not.to.include('secret@rcpt.test');
      await expectDkimPass(e, got.raw);
      const [a, b] = [await simpleParser(fs.readFileSync(`${out}.eml`)), await simpleParser(got.raw)];
      expect(sha(bodyOf(got.raw)), 'the body leaves as submitted').to.equal(sha(bodyOf(fs.readFileSync(`${out}.eml`))));
      expect(b.text).to.equal(a.text);
      expect(b.html).to.equal(a.html);
      expect(b.attachments.map((x) => [x.filename, x.contentId, sha(x.content)])).to.deep.equal(
        a.attachments.map((x) => [x.filename, x.contentId, sha(x.content)]),
      );
      if (kind === 'rich') expect(b.attachments.map((x) => x.size)).to.include(3 * 1024 * 1024);
      const secret = await waitFor('the Bcc copy', () =>
        e.mx.to('secret@rcpt.test').find((m) => m.raw.toString().includes(subject)),
      );
      expect(secret.raw.toString()).not.to.match(/^bcc:/im);
    });
  }

  it('refuses a wrong key with 535 5.7.8', async () => {
    const { reply } = await send('plain', 'ps_live_not_a_key');
    expect(reply.code).to.equal(535);
    expect(reply.text).to.match(/^5\.7\.8 /);
  });
});
