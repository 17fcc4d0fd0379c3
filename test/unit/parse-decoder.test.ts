// Which Sisimai decoder would take a notice, and what that decoder reads (issue 37): a DSN no vendor decoder takes is
// read as Sisimai's generic RFC 3464 decoder reads it; a vendor format's header signs count only with a value.
import { expect } from 'chai';
import { classifyBounce } from '../../src/core/classify.js';
import { NOTICE_FORMATS } from '../../src/core/providers/index.js';
import { formatReason } from '../../src/inbound/formats.js';
import { parseEntity } from '../../src/inbound/mime.js';
import { parseReport } from '../../src/inbound/parse.js';

/**
 * A multipart/report DSN: the human-readable part (with or without a charset) and the delivery-status part, the text
 * first unless `after`.
 */
function dsn(o: {
  subject: string;
  text: string;
  status: string;
  charset?: boolean;
  headers?: string[];
  after?: boolean;
}): Buffer {
  const text = [
    '--b1',
    o.charset === false ? 'Content-Type: text/plain' : 'Content-Type: text/plain; charset=us-ascii',
    '',
    o.text,
    '',
  ];
  const status = [
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.net',
    '',
    'Final-Recipient: rfc822; jane@example.net',
    'Action: failed',
    `Status: ${o.status}`,
    '',
  ];
  return Buffer.from(
    [
      'From: mailer-daemon@mx.example.net',
      'To: sender@example.org',
      `Subject: ${o.subject}`,
      ...(o.headers ?? []),
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
      '',
      ...(o.after ? [...status, ...text] : [...text, ...status]),
      '--b1--',
      '',
    ].join('\r\n'),
  );
}

const LAYOUT = 'Delivery to these addresses failed:\n\n  jane@example.net\n    No such mailbox here\n';

describe('parseReport: the generic RFC 3464 reading (no vendor decoder takes the notice)', () => {
  it('gives no diagnostic from indented lines under the address: undefined', async () => {
    const r = await parseReport(dsn({ subject: 'Message not delivered', text: LAYOUT, status: '5.0.0' }));
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['jane@example.net', 'undefined']]);
  });

  it('takes a "Mail Delivery System" From alone for no X1 notice (Sisimai\'s X1 also needs "Returned Mail: ")', async () => {
    const raw = dsn({ subject: 'Message not delivered', text: LAYOUT, status: '5.0.0' })
      .toString('latin1')
      .replace('From: mailer-daemon@', 'From: "Mail Delivery System" <mailer-daemon@')
      .replace('mx.example.net\r\nTo:', 'mx.example.net>\r\nTo:');
    const r = await parseReport(Buffer.from(raw, 'latin1'));
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['jane@example.net', 'undefined']]);
  });

  // labels: Sisimai 5.1.0 run on these notices (its reading starts at the delivery-status part)
  const REPLY = 'Delivery failed.\n\n550 5.1.1 <jane@example.net>: Recipient address rejected: User unknown\n';

  it('reads a flush-left line with a reply code in a text part after the delivery-status part', async () => {
    const r = await parseReport(dsn({ subject: 'Message not delivered', text: REPLY, status: '5.0.0', after: true }));
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['userunknown']);
  });

  it('reads it whether or not that part names its charset', async () => {
    const raw = dsn({ subject: 'Message not delivered', text: REPLY, status: '5.0.0', after: true, charset: false });
    expect((await parseReport(raw)).recipients.map((x) => x.reason)).to.deep.equal(['userunknown']);
  });

  it('reads no text part before the delivery-status part (the usual place): undefined', async () => {
    const r = await parseReport(dsn({ subject: 'Message not delivered', text: REPLY, status: '5.0.0' }));
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['undefined']);
  });

  it('reads a Status field that holds a reply instead of a status code', async () => {
    const r = await parseReport(
      dsn({ subject: 'Message not delivered', text: LAYOUT, status: '552 Message size exceeds fixed limit' }),
    );
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['mesgtoobig']);
  });

  it('still reads the text under the address when a vendor decoder (Postfix) takes the notice', async () => {
    // Sisimai's Postfix decoder takes it: its subject and one of its opening lines
    const text = `This is the mail system at host mx.example.net.\n\n${LAYOUT}`;
    const r = await parseReport(dsn({ subject: 'Undelivered Mail Returned to Sender', text, status: '5.0.0' }));
    expect(r.recipients.map((x) => x.reason)).to.not.deep.equal(['undefined']);
  });
});

describe('parseReport: a notice format counts a header sign only with a value', () => {
  const text = 'Delivery has failed to these recipients or groups:\n\njane@example.net\n';
  const diag = (h: string) =>
    dsn({ subject: 'Undeliverable: Minutes', text, status: '5.1.10', headers: [h] })
      .toString()
      .replace('Status: 5.1.10', 'Status: 5.1.10\r\nDiagnostic-Code: smtp; 550 5.1.10 Recipient not found');
  it('an empty X-MS-Exchange-Message-Is-Ndr is no Office 365 sign (5.1.10 reads filtered, as an Exchange DSN)', async () => {
    const r = await parseReport(Buffer.from(diag('X-MS-Exchange-Message-Is-Ndr: ')));
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['filtered']);
  });

  it("with a value it is (Office 365's own table: 5.1.10 userunknown)", async () => {
    const r = await parseReport(Buffer.from(diag('X-MS-Exchange-Message-Is-Ndr: true')));
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['userunknown']);
  });
});

describe('classifyBounce: phrase lists are Sisimai 5.1.0’s', () => {
  it('reads a bare "account disabled" as no reason of its own (not in Sisimai’s Suspend list)', () => {
    const r = classifyBounce({ status: '5.0.0', diagnostic: 'account disabled', action: 'failed', spec: 'X-Exim' });
    expect(r.reason).to.equal('onhold');
  });

  it('still reads Sisimai’s own suspend phrases', () => {
    const r = classifyBounce({ status: '5.0.0', diagnostic: 'this mailbox is disabled', action: 'failed' });
    expect(r.reason).to.equal('suspend');
  });
});

describe('parseReport: an Exim DSN reads its own error lines when they hold the Diagnostic-Code', () => {
  const exim = (lines: string[], diag: string) =>
    Buffer.from(
      [
        'From: Mail Delivery System <Mailer-Daemon@mx.example.net>',
        'To: sender@example.org',
        'Subject: Mail delivery failed: returning message to sender',
        'MIME-Version: 1.0',
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=us-ascii',
        '',
        'A message that you sent could not be delivered to one or more of its',
        'recipients. This is a permanent error. The following address(es) failed:',
        '',
        '  jane@example.net',
        ...lines,
        '',
        '--b1',
        'Content-Type: message/delivery-status',
        '',
        'Reporting-MTA: dns; mx.example.net',
        '',
        'Action: failed',
        'Final-Recipient: rfc822;jane@example.net',
        'Status: 5.0.0',
        `Diagnostic-Code: smtp; ${diag}`,
        '',
        '--b1--',
        '',
      ].join('\r\n'),
    );

  it('an LMTP failure that ran out of retries is systemerror (the text names the LMTP error), not expired', async () => {
    const r = await parseReport(
      exim(
        ['  host 10.0.0.1 [10.0.0.1]', '    LMTP error after DATA: 450 4.2.0 deferred: retry timeout exceeded'],
        '450 4.2.0 deferred: retry timeout exceeded',
      ),
    );
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['systemerror']);
  });

  it("a failed pipe the address led to is mailererror (Exim's own table)", () => {
    const exim = NOTICE_FORMATS.find((f) => f.family === 'Exim') ?? null;
    const text =
      'The following address(es) failed:   pipe to |/usr/local/bin/autoreply     generated by jane@example.net';
    expect(formatReason(exim, parseEntity('Subject: x\r\n\r\n'), text, null)).to.equal('mailererror');
  });

  it('keeps the Diagnostic-Code when the text does not contain it', async () => {
    const r = await parseReport(exim(['    LMTP error after DATA: 451 try later'], '550 5.2.2 mailbox is full'));
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['mailboxfull']);
  });
});

describe('parseReport: a Final-Recipient on a one-label domain', () => {
  it('is kept as written (Sisimai keeps "user@localhost-name")', async () => {
    const raw = dsn({ subject: 'Message not delivered', text: 'Failed.', status: '5.0.0' })
      .toString()
      .replace('rfc822; jane@example.net', 'rfc822; jane@mailhost');
    const r = await parseReport(Buffer.from(raw));
    expect(r.recipients.map((x) => x.address)).to.deep.equal(['jane@mailhost']);
  });
});

describe('parseReport: a qmail notice with a provider preamble (Sisimai Lhost::qmail)', () => {
  /** A qmail-send notice whose ISP added a paragraph naming every possible cause above the recipient. */
  const qmail = (error: string) =>
    Buffer.from(
      [
        'Received: (qmail 4242 invoked for bounce); 1 Mar 2026 10:00:00 -0000',
        'From: MAILER-DAEMON@mx.example.net',
        'To: sender@example.org',
        'Subject: failure notice',
        '',
        'Hi. This is the qmail-send program at mx.example.net.',
        "I'm afraid I wasn't able to deliver your message to the following addresses.",
        "This is a permanent error; I've given up. Sorry it didn't work out.",
        '-----------------------------------------------------------',
        'Common causes: the address does not exist (unknown user), the mailbox is full,',
        'or the message was rejected as spam by a content filter.',
        '-----------------------------------------------------------',
        '',
        '<jane@example.net>:',
        error,
        '',
        '--- Below this line is a copy of the message.',
        '',
        'Subject: hello',
        '',
      ].join('\n'),
    );

  it('reads the recipient from the lines after its "<address>:" line, not the preamble', async () => {
    const r = await parseReport(qmail('The mailbox of this user is over the allowed quota.'));
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['jane@example.net', 'mailboxfull']]);
  });

  it('gives no cause when nothing follows the address (the preamble is not read)', async () => {
    const r = await parseReport(qmail(''));
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['jane@example.net', 'undefined']]);
  });
});

describe('parseReport: an Exim-signed notice in a provider template (Sisimai Lhost::Exim)', () => {
  const notice = (body: string) =>
    Buffer.from(
      [
        'X-Failed-Recipients: jane@example.net',
        'From: Mail Delivery System <Mailer-Daemon@mx.example.net>',
        'To: sender@example.org',
        'Subject: Mail delivery failed: returning message to sender',
        '',
        body,
        '',
      ].join('\n'),
    );

  it("gives X-Failed-Recipients no cause when none of Exim's opening lines occurs", async () => {
    const r = await parseReport(
      notice('=== Undeliverable ===\n <jane@example.net>\n   552 5.2.2 <jane@example.net> Mailbox is full\n'),
    );
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['jane@example.net', 'undefined']]);
  });

  it("reads the error text after Exim's own opening line", async () => {
    const r = await parseReport(
      notice(
        'This message was created automatically by mail delivery software.\n\n' +
          'A message that you sent could not be delivered to one or more of its\nrecipients. This is a permanent error.\n\n' +
          '  jane@example.net\n    552 5.2.2 <jane@example.net> Mailbox is full\n',
      ),
    );
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['jane@example.net', 'mailboxfull']]);
  });
});

describe("parseReport: Exim's 'an undisclosed address (generated from a@b)'", () => {
  // label: Sisimai 5.1.0 run on this notice (Exim: recipient jane@example.net, 5.0.900, undefined)
  it('names the generated-from address and gives no cause when no error line follows', async () => {
    const raw = [
      'From: Mail Delivery System <Mailer-Daemon@mx.example.net>',
      'To: sender@example.org',
      'Subject: Mail delivery failed: returning message to sender',
      '',
      'This message was created automatically by mail delivery software.',
      '',
      'A message that you sent could not be delivered to one or more of its',
      'recipients. This is a permanent error. The following address(es) failed:',
      '',
      '  an undisclosed address',
      '    (generated from jane@example.net)',
      '',
      '------ This is a copy of the message, including all the headers. ------',
      '',
      'From: sender@example.org',
      'To: jane@example.net',
      '',
    ].join('\n');
    const r = await parseReport(raw);
    expect(r.recipients.map((x) => [x.address, x.status, x.reason])).to.deep.equal([
      ['jane@example.net', '5.0.900', 'undefined'],
    ]);
  });
});

describe("parseReport: several recipients in a notice only Sisimai's RFC 3464 text fallback reads", () => {
  it('gives the first recipient the text above the second one, the others their own lines', async () => {
    const raw = Buffer.from(
      [
        'From: postmaster@mx.example.net',
        'To: sender@example.org',
        'Subject: Nondelivery report',
        '',
        'Your message was not delivered because the destination computer was',
        'not reachable within the allowed queue period.',
        '',
        'The following recipients did not receive your message:',
        '<ann@far.example.net>',
        '',
        'The following recipients did not receive your message:',
        '<bob@far.example.net>',
        '',
        'Please write to the postmaster if you feel this message to be in error.',
        '',
      ].join('\n'),
    );
    const r = await parseReport(raw);
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([
      ['ann@far.example.net', 'expired'],
      ['bob@far.example.net', 'onhold'],
    ]);
  });
});

describe("parseReport: a status quoted inside another reply (Sisimai's Amazon SES decoder and the others)", () => {
  // labels: Sisimai 5.1.0 run on these three notices (RFC3464 5.1.0 userunknown; AmazonSES 5.7.1 securityerror)
  const notice = (headers: string[]) =>
    Buffer.from(
      [
        'From: mailer-daemon@mx.example.net',
        'To: sender@example.org',
        'Subject: Delivery Status Notification (Failure)',
        ...headers,
        'MIME-Version: 1.0',
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=us-ascii',
        '',
        'The following message to <jane@example.net> was undeliverable.',
        '',
        '--b1',
        'Content-Type: message/delivery-status',
        '',
        'Reporting-MTA: dns; mx.example.net',
        '',
        'Final-Recipient: rfc822; jane@example.net',
        'Action: failed',
        'Status: 5.0.0 (permanent failure)',
        "Diagnostic-Code: smtp; 5.1.0 - Unknown address error 550-'5.7.1 Access denied' (delivery attempts: 0)",
        '',
        '--b1--',
        '',
      ].join('\n'),
    );
  const read = async (headers: string[]) =>
    (await parseReport(notice(headers))).recipients.map((x) => [x.status, x.reason, x.hard]);

  it('takes the first status of the text when no Amazon SES header is there (5.1.0: userunknown)', async () => {
    expect(await read([])).to.deep.equal([['5.1.0', 'userunknown', true]]);
  });

  it('takes the status inside the quoted reply under X-SES-Outgoing (5.7.1: securityerror)', async () => {
    expect(await read(['X-SES-Outgoing: 2024.01.01-192.0.2.1'])).to.deep.equal([['5.7.1', 'securityerror', false]]);
  });

  it('does not for Amazon WorkMail, which the Amazon SES decoder leaves alone', async () => {
    const headers = ['X-SES-Outgoing: 2024.01.01-192.0.2.1', 'X-Mailer: Amazon WorkMail'];
    expect(await read(headers)).to.deep.equal([['5.1.0', 'userunknown', true]]);
  });
});

describe("parseReport: IMail Server's notices (Sisimai Lhost::IMailServer)", () => {
  // labels: Sisimai 5.1.0 run on these notices
  const imail = (text: string) =>
    Buffer.from(
      [
        'From: "Postmaster" <postmaster@mx.example.net>',
        'To: sender@example.org',
        'Subject:  Undeliverable Mail',
        'X-Mailer: <SMTP32 v20010525>',
        'Content-Type: text/plain; charset=us-ascii',
        '',
        text,
        '',
        'Original message follows.',
        '',
        'From: sender@example.org',
        'To: jane@example.net',
        'Subject: hello',
        '',
      ].join('\n'),
    );
  const read = async (text: string) =>
    (await parseReport(imail(text))).recipients.map((x) => [x.address, x.status, x.reason]);

  it('gives "undeliverable to a@b" its recipient and no cause', async () => {
    expect(await read('undeliverable  to jane@example.net')).to.deep.equal([
      ['jane@example.net', '5.0.900', 'undefined'],
    ]);
  });

  it("reads the remote server's response that follows it", async () => {
    const text = [
      'undeliverable to jane@example.net',
      'Body of message generated response:',
      '550 5.1.1 <jane@example.net>... User unknown',
    ].join('\n');
    expect(await read(text)).to.deep.equal([['jane@example.net', '5.1.1', 'userunknown']]);
  });

  it('reads a "Cause: a@b" line with its cause', async () => {
    expect(await read('Unknown user: jane@example.net')).to.deep.equal([
      ['jane@example.net', '5.0.911', 'userunknown'],
    ]);
  });
});

describe("parseReport: Sisimai's Postfix decoder reads nothing without one of its opening lines", () => {
  const notice = (opening: string) =>
    Buffer.from(
      [
        'From: MAILER-DAEMON@relay.example.org (Mail Delivery System)',
        'To: ann@example.org',
        'Date: Tue, 3 Mar 2026 10:00:00 +0000',
        'Subject: Undelivered Mail Returned to Sender',
        'MIME-Version: 1.0',
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b7"',
        '',
        '--b7',
        'Content-Type: text/plain; charset=us-ascii',
        '',
        opening,
        '',
        '<tom@example.net>: host mx.example.net[192.0.2.5] said: 550 No such user here',
        '    (in reply to RCPT TO command)',
        '',
        '--b7',
        'Content-Type: message/delivery-status',
        '',
        'Reporting-MTA: dns; relay.example.org',
        '',
        'Final-Recipient: rfc822; tom@example.net',
        'Action: failed',
        'Status: 5.0.0',
        'Remote-MTA: dns; mx.example.net',
        'Diagnostic-Code: smtp; 550 No such user here',
        '',
        '--b7--',
        '',
      ].join('\n'),
    );

  it('reads the notice text when it opens as Postfix does (the reply to RCPT: userunknown)', async () => {
    const r = await parseReport(notice('This is the mail system at host relay.example.org.'));
    expect(r.recipients.map((x) => [x.address, x.reason, x.hard])).to.deep.equal([
      ['tom@example.net', 'userunknown', true],
    ]);
  });

  it('reads the delivery-status part alone when it does not (no command known: filtered)', async () => {
    const r = await parseReport(notice('This is an automated message from the relay at Example.'));
    expect(r.recipients.map((x) => [x.address, x.reason, x.hard])).to.deep.equal([
      ['tom@example.net', 'filtered', false],
    ]);
  });

  it('reads the delivery-status part alone when no vendor decoder takes the notice at all (Sisimai RFC 3464)', async () => {
    const raw = notice('This is the mail system at host relay.example.org.')
      .toString('latin1')
      .replace('Subject: Undelivered Mail Returned to Sender', 'Subject: Message not delivered');
    const r = await parseReport(Buffer.from(raw, 'latin1'));
    expect(r.recipients.map((x) => [x.address, x.reason, x.hard])).to.deep.equal([
      ['tom@example.net', 'filtered', false],
    ]);
  });
});
