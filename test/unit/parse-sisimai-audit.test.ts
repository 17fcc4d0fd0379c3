// Session 22's audit against Sisimai 5.1.0's own rules (docs/inbound.md, "Session 22: audit against Sisimai"): a bounce
// notice is read with Sisimai's decision logic and phrase lists, a live SMTP reply also with the reader's own phrases
// (src/core/reply-rules-live.ts). Each notice here is this file's own; its expected reading is Sisimai 5.1.0's output on
// it (run here on the same bytes), the live one what the delivery loop should make of the same reply.
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { classifyBounce } from '../../src/core/classify.js';
import { readReply } from '../../src/outbound/outcome.js';
import { genericDsn } from '../helpers/generic-dsn.js';

function dsn(status: string, diagnostic: string, remote = 'mx.example.net'): Buffer {
  return genericDsn([
    'Final-Recipient: rfc822;ann@example.net',
    'Action: failed',
    `Status: ${status}`,
    `Remote-MTA: dns; ${remote}`,
    `Diagnostic-Code: smtp; ${diagnostic}`,
  ]);
}

async function noticeReason(status: string, diagnostic: string, remote?: string): Promise<[string, boolean | null]> {
  const r = await parseReport(dsn(status, diagnostic, remote));
  expect(r.recipients).to.have.length(1);
  return [r.recipients[0]?.reason as string, r.recipients[0]?.hard ?? null];
}

describe('Sisimai audit: phrases neither Sisimai 5.1.0 list holds are read in live replies only', () => {
  // [Status, reply, Sisimai 5.1.0's reason in a notice, the live reading]
  const CASES: [string, string, string, string][] = [
    [
      '5.7.1',
      "550 5.7.1 Access denied, sending domain example.org doesn't meet the required authentication level",
      'securityerror',
      'authfailure',
    ],
    // Sisimai lists it with "IP" in capitals and reads lower-cased text: it never matches there
    [
      '4.7.0',
      '421 4.7.0 Mail sent from your IP address has been temporarily rate limited, try again later',
      'securityerror',
      'speeding',
    ],
    // Sisimai 5.1.0 has no failedstarttls: the phrase is one of its securityerror ones
    ['5.7.0', '530 5.7.0 STARTTLS is required to send mail', 'securityerror', 'failedstarttls'],
    ['4.0.0', "451 4.0.0 Temporary failure: user's space has been used up", 'onhold', 'mailboxfull'],
    ['5.0.0', '550 5.0.0 Your access IP 192.0.2.9 has been rejected', 'onhold', 'blocked'],
    ['5.0.0', '554 5.0.0 Message rejected: Email null MX domain', 'onhold', 'notaccept'],
  ];
  for (const [status, reply, notice, live] of CASES) {
    it(`"${reply.slice(0, 60)}": ${notice} in a notice, ${live} live`, async () => {
      expect(await noticeReason(status, reply)).to.deep.equal([notice, false]);
      expect(readReply(reply, 'RCPT', 'mx.example.net').reason).to.equal(live);
    });
  }
});

function postfix(line: string, spec: string, diagnostic: string): Buffer {
  return Buffer.from(
    [
      'From: MAILER-DAEMON@mail.example.org (Mail Delivery System)',
      'To: owner@example.org',
      'Date: Tue, 3 Mar 2026 09:00:00 +0000',
      'Subject: Undelivered Mail Returned to Sender',
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="p1"',
      '',
      '--p1',
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'This is the mail system at host mail.example.org.',
      '',
      '                   The mail system',
      '',
      line,
      '',
      '--p1',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mail.example.org',
      '',
      'Final-Recipient: rfc822; ann@example.org',
      'Action: failed',
      'Status: 5.0.0',
      `Diagnostic-Code: ${spec}; ${diagnostic}`,
      '',
      '--p1--',
      '',
    ].join('\n'),
  );
}

describe("Sisimai audit: a vendor's phrases are read in its own decoder's notices (and live), not in a Postfix notice", () => {
  it('"unknown user:" (IMail\'s) in a Postfix local delivery notice is filtered: a user-unknown text outside RCPT', async () => {
    const r = await parseReport(postfix('<ann@example.org>: unknown user: "ann"', 'X-Postfix', 'unknown user: "ann"'));
    expect(r.recipients.map((x) => [x.reason, x.hard])).to.deep.equal([['filtered', false]]);
  });
  it('"Unknown recipient" (Exchange\'s) relayed by Postfix after DATA is filtered; live at RCPT it is userunknown', async () => {
    const line = '<ann@example.org>: host mx.example.org[192.0.2.4] said: 554 5.0.0 Unknown recipient';
    const r = await parseReport(
      postfix(`${line} (in reply to end of DATA command)`, 'smtp', '554 5.0.0 Unknown recipient'),
    );
    expect(r.recipients.map((x) => [x.reason, x.hard])).to.deep.equal([['filtered', false]]);
    expect(readReply('550 5.0.0 Unknown recipient', 'RCPT', 'mx.example.org')).to.deep.equal({
      reason: 'userunknown',
      hard: true,
    });
  });
});

describe("Sisimai audit: the remote host's table has the last word, a retry-class answer too (Sisimai::Fact)", () => {
  it('Outlook\'s 5.4.4 "Invalid arguments" is networkerror (soft) from a Microsoft host, not the status\' hostunknown', async () => {
    const outlook = 'example-net.mail.protection.outlook.com';
    expect(await noticeReason('5.4.4', '550 5.4.4 Invalid arguments', outlook)).to.deep.equal(['networkerror', false]);
    expect(
      await noticeReason('5.4.4', '550 5.4.4 SMTPSEND.DNS.NonExistentDomain; nonexistent domain', outlook),
    ).to.deep.equal(['networkerror', false]);
    // from another host the status decides
    expect(await noticeReason('5.4.4', '550 5.4.4 Invalid arguments')).to.deep.equal(['hostunknown', true]);
  });
});

describe("Sisimai audit: Reason.pm's decision order in a notice", () => {
  it("a 5.5.x status names no reason (onhold); a live reply keeps the reader's syntaxerror", async () => {
    expect(await noticeReason('5.5.0', '550 5.5.0 Requested action not taken, try later')).to.deep.equal([
      'onhold',
      false,
    ]);
    expect(await noticeReason('5.5.1', '554 5.5.1 Error: no valid recipients')).to.deep.equal(['onhold', false]);
    expect(readReply('550 5.5.0 Requested action not taken, try later', 'RCPT').reason).to.equal('syntaxerror');
  });
  it('status 5.7.30 is securityerror in a notice (Sisimai 5.1.0 has no failedstarttls), failedstarttls live', async () => {
    expect(await noticeReason('5.7.30', '550 5.7.30 Requested action aborted')).to.deep.equal(['securityerror', false]);
    expect(readReply('550 5.7.30 Requested action aborted', 'RCPT', 'mx.example.net').reason).to.equal(
      'failedstarttls',
    );
  });
  it("a phrase ending in a space does not match at the end of a notice's diagnostic (Sisimai sweeps it)", async () => {
    expect(await noticeReason('5.0.0', '554 5.0.0 Message refused, high spam score')).to.deep.equal(['onhold', false]);
    expect(readReply('554 5.0.0 Message refused, high spam score', 'DATA').reason).to.equal('spamdetected');
  });
  it('contenterror is not in the primary pass: "sender rejected" after DATA wins over a header-size text', async () => {
    const reply = '552 5.0.0 Header size exceeds maximum permitted, sender rejected (in reply to end of DATA command)';
    expect(await noticeReason('5.0.0', reply)).to.deep.equal(['rejected', false]);
  });
  it("suspend is retry-class: a notice's suspend is read again, a mailbox-full text first (MailboxFull before Suspend)", () => {
    const facts = { status: '5.0.0', diagnostic: '550 Mailbox full', reason: 'suspend' as const, spec: 'SMTP' };
    expect(classifyBounce(facts).reason).to.equal('mailboxfull');
    expect(classifyBounce({ ...facts, diagnostic: '550 Not delivered' }).reason).to.equal('suspend');
  });
  it('Filtered and SpamDetected read the text after STARTTLS or AUTH (only CONN, EHLO, HELO, MAIL, RCPT stop them)', () => {
    expect(classifyBounce({ status: '5.0.0', diagnostic: '550 user reject', command: 'STARTTLS' }).reason).to.equal(
      'filtered',
    );
    expect(classifyBounce({ status: '5.0.0', diagnostic: '550 user reject', command: 'RCPT' }).reason).to.equal(
      'onhold',
    );
  });
});
