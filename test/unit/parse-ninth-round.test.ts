// Issue 37, ninth held-out round: rules written from Sisimai 5.1.0's code, each tested on its own text (never a
// held-out notice's).
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { readRecipients as read, reportDsn as dsn } from '../helpers/generic-dsn.js';
import { lastPostfixEntry } from '../../src/inbound/postfix-reply.js';

describe("parseReport: Domino's own texts are read in Domino's notices only (Sisimai Lhost::Domino)", () => {
  it('a gateway\'s DSN quoting Notes\' "Cannot route mail to user" under Status 5.1.1 reads userunknown', async () => {
    const raw = dsn({
      from: 'Mail Gateway <gateway@relay.example.org>',
      subject: 'Returned mail',
      text: ['The message cannot be delivered to the following address.', '', 'tom@example.net'],
      fields: [
        'Final-Recipient: rfc822;tom@example.net',
        'Action: failed',
        'Status: 5.1.1',
        'Diagnostic-Code: X-Notes; Cannot route mail to user (tom@example.net).',
      ],
    });
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'userunknown', true]]);
  });

  it('a Domino notice ("DELIVERY FAILURE:") saying "Cannot route mail to user" reads filtered', async () => {
    const raw = [
      'From: Postmaster@example.net',
      'To: ann@example.org',
      'Date: Tue, 3 Mar 2026 10:00:00 +0000',
      'Subject: DELIVERY FAILURE: Cannot route mail to user (tom@example.net)',
      'MIME-Version: 1.0',
      'Content-Type: text/plain',
      '',
      'Your message',
      '',
      '  Subject: hello',
      '',
      'was not delivered to:',
      '',
      '  tom@example.net',
      '',
      'because:',
      '',
      '  Cannot route mail to user (tom@example.net)',
      '',
    ];
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'filtered', false]]);
  });
});

describe('parseReport: Postfix\'s local "unknown user:" with no SMTP command (Sisimai\'s Filtered rule)', () => {
  it('reads filtered: a user-unknown text outside RCPT/MAIL is filtered in Sisimai', async () => {
    const raw = dsn({
      from: 'MAILER-DAEMON@relay.example.org (Mail Delivery System)',
      subject: 'Undelivered Mail Returned to Sender',
      text: [
        'This is the mail system at host relay.example.org.',
        '',
        "I'm sorry to have to inform you that your message could not",
        "be delivered to one or more recipients. It's attached below.",
        '',
        '                   The mail system',
        '',
        '<tom@example.net>: unknown user: "tom"',
      ],
      fields: [
        'Final-Recipient: rfc822; tom@example.net',
        'Action: failed',
        'Status: 5.0.0',
        'Diagnostic-Code: X-Postfix; unknown user: "tom"',
      ],
    });
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'filtered', false]]);
  });
});

describe('parseReport: a Japanese failure report names its recipient after 送信先 ("destination")', () => {
  it("takes the address after 送信先, not the list address of the copy's 宛先 (To) line", async () => {
    const raw = [
      'From: postmaster@mail.example.net',
      'To: list-admin@example.org',
      'Date: Tue, 3 Mar 2026 10:00:00 +0000',
      'Subject: [list:01234] hello',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      '送信エラーレポート',
      '',
      ' 件名:        [list:01234] hello',
      ' 送信先:      tom@branch.example.net',
      ' 原因:        The peer SMTP host reports that it received bad SMTP command syntax.',
      '',
      '                         ________________________',
      '',
      '宛先:     list@example.org (example list)',
      '送信者:   SMTPGW/BRANCH',
      '',
    ];
    expect((await read(raw)).map((r) => r[0])).to.deep.equal(['tom@branch.example.net']);
  });
});

describe("parseReport: Sisimai's Postfix decoder shares the notice's last entry with every generic Status", () => {
  const raw = dsn({
    from: 'MAILER-DAEMON@relay.example.org (Mail Delivery System)',
    subject: 'Undelivered Mail Returned to Sender',
    text: [
      'This is the mail system at host relay.example.org.',
      '',
      "I'm sorry to have to inform you that your message could not",
      "be delivered to one or more recipients. It's attached below.",
      '',
      '                   The mail system',
      '',
      '<amy@example.com>: host mx.example.com[192.0.2.7] said: 554 message refused:',
      '    this user is gone from example.com (in reply to end of DATA command)',
      '',
      '<bob@example.net>: host mx.example.net[192.0.2.8] said: 550 5.1.1 No such',
      '    user here (in reply to RCPT TO command)',
    ],
    fields: [
      'Final-Recipient: rfc822; amy@example.com',
      'Action: failed',
      'Status: 5.0.0',
      'Diagnostic-Code: X-Postfix; host mx.example.com[192.0.2.7] said: 554 message',
      '    refused: this user is gone from example.com (in reply to end of DATA command)',
      '',
      'Final-Recipient: rfc822; bob@example.net',
      'Action: failed',
      'Status: 5.0.0',
      'Diagnostic-Code: X-Postfix; host mx.example.net[192.0.2.8] said: 550 5.1.1 No',
      '    such user here (in reply to RCPT TO command)',
    ],
  });

  it('gives a 5.0.0 recipient the last entry\'s 5.1.1 (the first reads userunknown, not its own "filtered")', async () => {
    const report = await parseReport(Buffer.from(raw.join('\n')));
    expect((report.recipients ?? []).map((r) => [r.address, r.status, r.reason])).to.deep.equal([
      ['amy@example.com', '5.1.1', 'userunknown'],
      ['bob@example.net', '5.1.1', 'userunknown'],
    ]);
  });

  it('reads the last entry with its wrapped lines', () => {
    const section = raw.slice(14, 22).join('\n');
    expect(lastPostfixEntry(section)).to.equal(
      'host mx.example.net[192.0.2.8] said: 550 5.1.1 No such user here (in reply to RCPT TO command)',
    );
  });
});
