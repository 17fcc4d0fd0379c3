// Issue 37, tenth held-out round: rules written from Sisimai 5.1.0's code, each tested on its own text (never a
// held-out notice's). The expected readings are Sisimai 5.1.0's output on these same notices.
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';

const read = async (raw: string[]) =>
  ((await parseReport(Buffer.from(raw.join('\n')))).recipients ?? []).map((r) => [r.address, r.reason, r.hard]);

/** A multipart/report DSN: its human-readable text and its delivery-status part's per-recipient fields. */
function dsn(o: { from: string; subject: string; text: string[]; fields: string[] }): string[] {
  return [
    `From: ${o.from}`,
    'To: ann@example.org',
    'Date: Tue, 3 Mar 2026 10:00:00 +0000',
    `Subject: ${o.subject}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b10"',
    '',
    '--b10',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    ...o.text,
    '',
    '--b10',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.example.org',
    '',
    ...o.fields,
    '',
    '--b10',
    'Content-Type: text/rfc822-headers',
    '',
    'From: ann@example.org',
    'To: tom@example.net',
    'Subject: hello',
    '',
    '--b10--',
    '',
  ];
}

describe("parseReport: Sisimai's Filtered rule on a user-unknown text with no SMTP command", () => {
  const fields = (remote: string[]) => [
    'Final-Recipient: rfc822;tom@example.net',
    'Action: failed',
    'Status: 5.1.10',
    ...remote,
    'Diagnostic-Code: smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
  ];
  const text = ['Delivery has failed to these recipients or groups:', '', 'tom@example.net'];

  it("reads an on-premise Exchange's 5.1.10 in a generic DSN as filtered (soft)", async () => {
    const raw = dsn({ from: 'postmaster@example.net', subject: 'Delivery report', text, fields: fields([]) });
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'filtered', false]]);
  });

  it("reads it as userunknown (hard) when Microsoft's own host returned it (Sisimai Rhost::Microsoft)", async () => {
    const remote = ['Remote-MTA: dns; example-net.mail.protection.outlook.com'];
    const raw = dsn({ from: 'postmaster@example.net', subject: 'Delivery report', text, fields: fields(remote) });
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'userunknown', true]]);
  });
});

describe("parseReport: where Sisimai's RFC 3464 decoder starts reading a DSN with no Diagnostic-Code", () => {
  const sendmailLike = (reply: string, opening: string) =>
    dsn({
      from: 'Mail Delivery Subsystem <mailer-daemon@relay.example.org>',
      subject: 'Delivery report: response error',
      text: [
        opening,
        '',
        '   ----- The following addresses had permanent fatal errors -----',
        '<tom@example.net>',
        '',
        '   ----- Transcript of session follows -----',
        '... while talking to mx.example.net.',
        '>>> DATA',
        reply,
      ],
      fields: ['Final-Recipient: RFC822; <tom@example.net>', 'Action: failed', 'Remote-MTA: DNS; mx.example.net'],
    });
  const opening = 'The original message was received at Tue, 3 Mar 2026 09:59:00 +0000';

  it('reads the text part from its opening line: a reply naming no reason is onhold (5.0.901, soft)', async () => {
    const report = await parseReport(
      Buffer.from(sendmailLike('<<< 550 Your message scored too many points', opening).join('\n')),
    );
    expect(report.recipients.map((r) => [r.address, r.reason, r.status, r.hard])).to.deep.equal([
      ['tom@example.net', 'onhold', '5.0.901', false],
    ]);
  });

  it('reads the reason a reply of that text names', async () => {
    const raw = sendmailLike('<<< 552 5.2.2 Mailbox full', opening);
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'mailboxfull', false]]);
  });

  it('does not read a text part without such an opening line', async () => {
    const raw = sendmailLike('<<< 552 5.2.2 Mailbox full', 'Delivery to the following recipient failed.');
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'undefined', false]]);
  });
});
