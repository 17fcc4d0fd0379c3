// Issue 37, tenth held-out round: rules written from Sisimai 5.1.0's code, each tested on its own text (never a
// held-out notice's). The expected readings are Sisimai 5.1.0's output on these same notices.
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { readRecipients as read, reportDsn as dsn } from '../helpers/generic-dsn.js';
import { fallbackRecipients, sisimaiCommand } from '../../src/inbound/rfc3464-fallback.js';

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

describe('parseReport: a notice format whose decoder reads nothing without its opening line (Sisimai X2)', () => {
  it("reads a DSN with X2's subject but not its opening line as Sisimai's RFC 3464 decoder does", async () => {
    const raw = dsn({
      from: 'Mail Delivery Subsystem <mailer-daemon@relay.example.org>',
      subject: 'Delivery failure: response error',
      text: [
        'The original message was received at Tue, 3 Mar 2026 09:59:00 +0000',
        '',
        '<tom@example.net>',
        '>>> DATA',
        '<<< 550 Your message scored too many points',
      ],
      fields: ['Final-Recipient: RFC822; <tom@example.net>', 'Action: failed', 'Remote-MTA: DNS; mx.example.net'],
    });
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'onhold', false]]);
  });
});

describe("parseReport: Sisimai's RFC 3464 fallback for a notice with no delivery-status part", () => {
  const notice = (subject: string, body: string[]) => [
    'From: mailer-daemon@mail.example.net',
    'To: ann@example.org',
    'Date: Tue, 3 Mar 2026 10:00:00 +0000',
    `Subject: ${subject}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    ...body,
    '',
  ];
  const block = (address: string, sent: string, reply: string) => [
    address,
    '   Error Type: SMTP',
    '   Remote server (192.0.2.10) issued an error.',
    `   Our server sent: ${sent}`,
    `   Remote server replied: ${reply}`,
    '',
  ];

  it('names only the recipient a line names as Sisimai reads it (an indented "RCPT TO:<a@b>"), not bare addresses', async () => {
    const raw = notice('Message undeliverable: hello', [
      'Your message did not reach some or all of the intended recipients.',
      '',
      'The following recipient(s) could not be reached:',
      '',
      ...block('tom@example.net', '.', '554 Message refused, too many points'),
      ...block('bob@example.net', 'RCPT TO:<bob@example.net>', '550 No such user here'),
      ...block('eve@example.net', '.', '554 Message refused, too many points'),
    ]);
    expect(await read(raw)).to.deep.equal([['bob@example.net', 'userunknown', true]]);
  });

  it('gives each recipient the lines from its own to the next one (the first one also those above it)', () => {
    const got = fallbackRecipients(
      [
        'Your message could not be delivered to these recipients:',
        '',
        '  tom@example.net: 550 No such user here',
        '  bob@example.net: 552 Mailbox full',
      ].join('\n'),
    );
    expect(got.map((r) => [r.address, r.diagnostic])).to.deep.equal([
      [
        'tom@example.net',
        'Your message could not be delivered to these recipients: tom@example.net: 550 No such user here',
      ],
      ['bob@example.net', 'bob@example.net: 552 Mailbox full'],
    ]);
  });

  it('reads each of those recipients with its own lines', async () => {
    const raw = notice('Mail delivery failed', [
      'Your message could not be delivered to these recipients:',
      '',
      '  tom@example.net: 550 No such user here',
      '  bob@example.net: 552 Mailbox full',
    ]);
    expect(await read(raw)).to.deep.equal([
      ['tom@example.net', 'filtered', false],
      ['bob@example.net', 'mailboxfull', false],
    ]);
  });

  it("leaves a notice an Exchange 2003 decoder takes (X-MimeOLE) to the reader's own reading", async () => {
    const raw = [
      'From: System Administrator <postmaster@example.net>',
      'To: ann@example.org',
      'Subject: Undeliverable mail: hello',
      'Date: Tue, 3 Mar 2026 10:00:00 +0000',
      'X-MimeOLE: Produced By Microsoft Exchange V6.5',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'Your message',
      '',
      '  To:      list@example.net',
      '  Subject: hello',
      '',
      'did not reach the following recipient(s):',
      '',
      'tom@example.net on Tue, 3 Mar 2026 10:00:00 +0000',
      '    The recipient name is not recognized',
      '    MSEXCH:IMS:EXAMPLE:RELAY:MX 0 (000C05A6)',
      'Unknown Recipient',
      '',
    ];
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'userunknown', true]]);
    // without Exchange 2003's sign Sisimai's RFC 3464 fallback reads it: the indented "To:" line names the recipient,
    // and Exchange's "Unknown Recipient" is a generic user-unknown text there, with no SMTP command: filtered
    const generic = raw.map((l) => (l.startsWith('X-MimeOLE:') ? 'X-Note: none' : l));
    expect(await read(generic)).to.deep.equal([['list@example.net', 'filtered', false]]);
  });

  it('finds the last SMTP command in capitals, as Sisimai::SMTP::Command does', () => {
    expect(sisimaiCommand('MAIL FROM:<a@b> ok, RCPT TO:<c@d> refused')).to.equal('RCPT');
    expect(sisimaiCommand('rcpt to:<c@d> refused')).to.equal(null);
  });
});
