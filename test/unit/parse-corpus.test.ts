// Runs parseReport on every message of the public bounce corpus (test/fixtures/corpus, from
// Sisimai's set-of-emails, BSD-2-Clause) and checks it against expected.json.
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { describeReportFixtures } from '../helpers/report-fixtures.js';

describeReportFixtures('parseReport on the bounce corpus', 'corpus');

describe('parseReport: original message facts', () => {
  const dsn = [
    'From: MAILER-DAEMON@mx.example.org',
    'To: bounces+abc@bounce.example.com',
    'Subject: Undelivered Mail Returned to Sender',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
    '',
    '--b',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.org',
    'X-Original-Mail-From: <bounces+abc@bounce.example.com>',
    '',
    'Final-Recipient: rfc822; u@example.net',
    'Action: failed',
    'Status: 5.1.1',
    'Diagnostic-Code: smtp; 550 5.1.1 User unknown',
    '',
    '--b',
    'Content-Type: text/rfc822-headers',
    '',
    'Message-ID: <em_0123456789abcdefghijklmnop@mta.example.com>',
    '',
    '--b--',
    '',
  ].join('\r\n');

  it('extracts message id, our email id and the VERP return path', async () => {
    const r = await parseReport(dsn);
    expect(r.original.message_id).to.equal('<em_0123456789abcdefghijklmnop@mta.example.com>');
    expect(r.original.email_id).to.equal('em_0123456789abcdefghijklmnop');
    expect(r.original.return_path).to.equal('bounces+abc@bounce.example.com');
    expect(r.recipients[0]).to.include({
      address: 'u@example.net',
      action: 'failed',
      reason: 'userunknown',
      hard: true,
    });
  });

  it('never throws on garbage', async () => {
    expect((await parseReport('')).recipients).to.deep.equal([]);
    expect((await parseReport(Buffer.from([0xff, 0x00, 0x0a]))).kind).to.equal('other');
  });
});
