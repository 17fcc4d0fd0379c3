// Issue 37, eleventh held-out round: rules written from Sisimai 5.1.0's code, each tested on its own text (never a
// held-out notice's).
import { expect } from 'chai';
import { readRecipients as read } from '../helpers/generic-dsn.js';

/** An Exim DSN for a message to ann@example.org that a .forward redirected to tom@example.net, which failed. */
function eximRedirected(failedHeader: boolean, generated = '(generated from ann@example.org)'): string[] {
  return [
    'From: Mail Delivery System <Mailer-Daemon@mx.example.org>',
    'To: sender@example.com',
    ...(failedHeader ? ['X-Failed-Recipients: tom@example.net'] : []),
    'Subject: Mail delivery failed: returning message to sender',
    'Date: Tue, 3 Mar 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="e11"',
    '',
    '--e11',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'This message was created automatically by mail delivery software.',
    '',
    'A message that you sent could not be delivered to one or more of its',
    'recipients. This is a permanent error. The following address(es) failed:',
    '',
    '  tom@example.net',
    `    ${generated}`,
    '    host mx.example.net [192.0.2.7]',
    '    SMTP error from remote mail server after RCPT TO:<tom@example.net>:',
    '    550 5.1.1 <tom@example.net>: Recipient address rejected: User unknown',
    '',
    '--e11',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.org',
    '',
    'Action: failed',
    'Final-Recipient: rfc822;ann@example.org',
    'Status: 5.0.0',
    'Remote-MTA: dns; mx.example.net',
    'Diagnostic-Code: smtp; 550 5.1.1 <tom@example.net>: Recipient address rejected: User unknown',
    '',
    '--e11',
    'Content-Type: text/rfc822-headers',
    '',
    'From: sender@example.com',
    'To: ann@example.org',
    'Subject: hello',
    '',
    '--e11--',
    '',
  ];
}

describe("parseReport: Exim's redirected address (Sisimai's Exim decoder reads the address that failed)", () => {
  it('takes the address the text and X-Failed-Recipients name, not the Final-Recipient it was generated from', async () => {
    expect(await read(eximRedirected(true))).to.deep.equal([['tom@example.net', 'userunknown', true]]);
  });

  it('the same for "ultimately generated from"', async () => {
    const raw = eximRedirected(true, '(ultimately generated from ann@example.org)');
    expect(await read(raw)).to.deep.equal([['tom@example.net', 'userunknown', true]]);
  });

  it('keeps the Final-Recipient when X-Failed-Recipients does not name the failed address', async () => {
    expect(await read(eximRedirected(false))).to.deep.equal([['ann@example.org', 'userunknown', true]]);
  });
});
