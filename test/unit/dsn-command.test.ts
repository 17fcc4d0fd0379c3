// The SMTP command a notice names (src/inbound/dsn.ts commandIn): Sisimai's Filtered rule turns a user-unknown text
// into `filtered` only when no command is named, so a wording the reader misses changes the reason and hard/soft.
import { expect } from 'chai';
import { commandIn } from '../../src/inbound/dsn.js';

describe('commandIn: the SMTP command a notice names', () => {
  for (const [text, cmd] of [
    ['SMTP error from remote mail server after RCPT TO:<a@b.test>:\n    550 5.1.1 unknown', 'RCPT'],
    // 1&1's notices (eleventh held-out round, driverdev/45ee74c7: Sisimai reads RCPT, userunknown/hard)
    [
      'SMTP error from remote server for RCPT TO command, host: mx.b.test (192.0.2.1) reason: 550 No Such User Here',
      'RCPT',
    ],
    [
      'SMTP error from remote server for MAIL FROM command, host: mx.b.test (192.0.2.1) reason: 550 sender refused',
      'MAIL',
    ],
    ['SMTP error from remote server for DATA command, host: mx.b.test (192.0.2.1) reason: 554 rejected', 'DATA'],
    [
      'host mx.b.test[192.0.2.1] said: 550 5.1.1 <a@b.test>: Recipient address rejected (in reply to RCPT TO command)',
      'RCPT',
    ],
  ] as const)
    it(`${cmd}: ${text.slice(0, 60)}…`, () => expect(commandIn(text)).to.equal(cmd));

  it('no command: a bare user-unknown text', () => expect(commandIn('550 No Such User Here')).to.equal(null));
});
