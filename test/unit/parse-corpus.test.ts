// Runs parseReport on every message of the public bounce corpus (test/fixtures/corpus, from
// Sisimai's set-of-emails, BSD-2-Clause) and checks it against expected.json.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';

interface Expected {
  file: string; kind: string;
  recipients: { address: string | null; status: string | null; reason: string; hard: boolean | null;
    replycode: string | null; feedback_type: string | null }[];
}

const dir = fileURLToPath(new URL('../fixtures/corpus/', import.meta.url));
const expected = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as Expected[];

describe('parseReport on the bounce corpus', () => {
  it('has an expectation for every .eml file', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.eml')).sort();
    expect(files).to.deep.equal(expected.map((e) => e.file).sort());
  });

  for (const e of expected) {
    it(`reads ${e.file}`, async () => {
      const report = await parseReport(readFileSync(dir + e.file));
      expect(report.kind).to.equal(e.kind);
      const got = report.recipients.map((r) => ({
        address: r.address, status: r.status, reason: r.reason, hard: r.hard,
        replycode: r.replycode ?? null, feedback_type: r.feedback_type ?? null,
      }));
      expect(got).to.deep.equal(e.recipients.map((r) => ({
        address: r.address, status: r.status, reason: r.reason, hard: r.hard,
        replycode: r.replycode, feedback_type: r.feedback_type,
      })));
      expect(report.original).to.have.keys(['message_id', 'email_id', 'return_path', 'from']);
    });
  }
});

describe('parseReport: original message facts', () => {
  const dsn = [
    'From: MAILER-DAEMON@mx.example.org', 'To: bounces+abc@bounce.example.com',
    'Subject: Undelivered Mail Returned to Sender',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b"', '', '--b',
    'Content-Type: message/delivery-status', '', 'Reporting-MTA: dns; mx.example.org',
    'X-Original-Mail-From: <bounces+abc@bounce.example.com>', '', 'Final-Recipient: rfc822; u@example.net',
    'Action: failed', 'Status: 5.1.1', 'Diagnostic-Code: smtp; 550 5.1.1 User unknown', '', '--b',
    'Content-Type: text/rfc822-headers', '', 'Message-ID: <em_0123456789abcdefghijklmnop@mta.example.com>', '',
    '--b--', '',
  ].join('\r\n');

  it('extracts message id, our email id and the VERP return path', async () => {
    const r = await parseReport(dsn);
    expect(r.original.message_id).to.equal('<em_0123456789abcdefghijklmnop@mta.example.com>');
    expect(r.original.email_id).to.equal('em_0123456789abcdefghijklmnop');
    expect(r.original.return_path).to.equal('bounces+abc@bounce.example.com');
    expect(r.recipients[0]).to.include({ address: 'u@example.net', action: 'failed', reason: 'userunknown', hard: true });
  });

  it('never throws on garbage', async () => {
    expect((await parseReport('')).recipients).to.deep.equal([]);
    expect((await parseReport(Buffer.from([0xff, 0x00, 0x0a]))).kind).to.equal('other');
  });
});
