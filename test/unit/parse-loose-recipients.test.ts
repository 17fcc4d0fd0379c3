// The layout-free recipient finder (src/inbound/loose-recipients.ts) on notices written for this test in layouts no
// line rule knows: the failed address after a lead phrase, alone on a line above its reason, or inside a sentence;
// never the sender, the postmaster or an address of the returned message's headers.
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { looseRecipients } from '../../src/inbound/loose-recipients.js';

function notice(body: string, subject = 'Undeliverable mail'): Buffer {
  return Buffer.from(
    [
      'From: Mail Administrator <postmaster@relay.example.org>',
      'To: news@sender.example.com',
      `Subject: ${subject}`,
      'Date: Mon, 3 Mar 2025 10:00:00 +0100',
      'Message-ID: <n1@relay.example.org>',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: 8bit',
      '',
      body,
    ].join('\r\n'),
  );
}

const RETURNED = [
  '',
  '------ Original message follows ------',
  '',
  'From: news@sender.example.com',
  'To: friend@elsewhere.example.net',
  'Subject: hello',
  '',
  'hi',
].join('\r\n');

describe('parseReport: recipients of notices of any layout', () => {
  it('reads the addresses listed after a lead phrase ("the following recipients")', async () => {
    const r = await parseReport(
      notice(
        'Your message could not be delivered to the following recipients:\r\n\r\n' +
          '    Alice Liddell (alice@wonder.example.net)\r\n    Bob (bob@wonder.example.net)\r\n\r\n' +
          'Reason: mailbox full' +
          RETURNED,
      ),
    );
    expect(r.recipients.map((x) => x.address)).to.deep.equal(['alice@wonder.example.net', 'bob@wonder.example.net']);
    // Sisimai's RFC 3464 fallback reads it (src/inbound/rfc3464-fallback.ts): each recipient's error is the lines from
    // its own to the next one's, so only Bob's holds "Reason: mailbox full" (Sisimai 5.1.0: onhold, mailboxfull)
    expect(r.recipients.map((x) => x.reason)).to.deep.equal(['onhold', 'mailboxfull']);
  });

  // its reason is onhold: a notice is read with Sisimai 5.1.0's lists, which know no German ("Postfach voll" is
  // mailboxfull in a live reply only: classify-localised.test.ts)
  it('reads an address inside a localised sentence (German, no status code)', async () => {
    const r = await parseReport(
      notice(
        'Ihre Nachricht an <heinz@empfang.example.de> konnte nicht zugestellt werden.\r\n' +
          'Grund: Postfach voll' +
          RETURNED,
        'Unzustellbar',
      ),
    );
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['heinz@empfang.example.de', 'onhold']]);
  });

  it('reads an address alone on its line above its reason line', async () => {
    const found = looseRecipients(
      'Delivery report from relay.example.org\n\n  "carla@dest.example.it"\n  Utente sconosciuto\n',
      new Set(),
    );
    expect(found).to.deep.equal(['carla@dest.example.it']);
  });

  it('never takes the sender, the postmaster, a mailer-daemon or a header line of the returned message', () => {
    const section = [
      'The following addresses had permanent delivery errors:',
      'From: news@sender.example.com',
      '',
      'postmaster@relay.example.org wrote this notice about MAILER-DAEMON@relay.example.org',
      'Message sent by news@sender.example.com to dora@dest.example.com was refused',
    ].join('\n');
    expect(looseRecipients(section, new Set(['news@sender.example.com']))).to.deep.equal(['dora@dest.example.com']);
  });

  it('drops the "SMTP=" address type and quotes around an address', () => {
    expect(looseRecipients("Unable to deliver to 'SMTP=eve@dest.example.com'\n", new Set())).to.deep.equal([
      'eve@dest.example.com',
    ]);
  });

  it('falls back to the "To:" line a notice quotes of the message it could not deliver', async () => {
    const r = await parseReport(
      notice(
        "Sorry, the following message could not be handed over; I won't try again.\r\n\r\n" +
          'Subject: hello\r\nTo: carol@far.example.net\r\n\r\n--- Below this line is a copy of the message.\r\n',
        'Undeliverable mail',
      ),
    );
    expect(r.recipients.map((x) => x.address)).to.deep.equal(['carol@far.example.net']);
  });
});

describe("parseReport: Sendmail's '(expanded from: <a@b>)' under a recipient", () => {
  // label: Sisimai 5.1.0 run on this notice (RFC 3464 text fallback: recipient jane@example.com, userunknown)
  const raw = [
    'From: Mail Delivery Subsystem <MAILER-DAEMON@mx.example.net>',
    'To: <sender@example.org>',
    'Subject: Returned mail: see transcript for details',
    '',
    '   ----- The following addresses had permanent fatal errors -----',
    'jane.doe@mail.example.net',
    '    (reason: 550 5.1.1 User unknown)',
    '    (expanded from: <jane@example.com>)',
    '',
    '   ----- Transcript of session follows -----',
    '... while talking to mx.example.net.:',
    '>>> DATA',
    '<<< 550 5.1.1 User unknown',
    '',
    '   ----- Message header follows -----',
    '',
    'Return-Path: <sender@example.org>',
    'From: sender@example.org',
    'To: jane@example.com',
    'Subject: hello',
    '',
  ].join('\n');

  it('keeps the address it reached and names the one it was sent to as the original recipient', async () => {
    const r = await parseReport(raw);
    expect(r.recipients.map((x) => [x.address, x.original_recipient, x.reason])).to.deep.equal([
      ['jane.doe@mail.example.net', 'jane@example.com', 'userunknown'],
    ]);
  });

  it('names no original recipient when no such line is in the block', async () => {
    const r = await parseReport(raw.replace('    (expanded from: <jane@example.com>)\n', ''));
    expect(r.recipients.map((x) => x.original_recipient)).to.deep.equal([undefined]);
  });
});

describe("parseReport: an address inside a Postfix notice's wrapped reply is no recipient", () => {
  const raw = Buffer.from(
    [
      'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)',
      'To: news@example.org',
      'Date: Tue, 3 Mar 2026 10:00:00 +0000',
      'Subject: Undelivered Mail Returned to Sender',
      'Content-Type: text/plain; charset=us-ascii',
      '',
      'This is the mail system at host mx.example.org.',
      '',
      '                   The mail system',
      '',
      '<ada@relay.example.net>: host mx1.relay.example.net[192.0.2.11] said: 550 5.1.1',
      '    <bounce-7f3a@news.example.org>: sender not allowed to use this relay (in',
      '    reply to RCPT TO command)',
      '',
    ].join('\n'),
  );

  it('keeps the recipient at the left margin, not the address the reply names on its second line', async () => {
    const r = await parseReport(raw);
    expect(r.recipients.map((x) => [x.address, x.reason, x.status])).to.deep.equal([
      ['ada@relay.example.net', 'userunknown', '5.1.1'],
    ]);
  });
});
