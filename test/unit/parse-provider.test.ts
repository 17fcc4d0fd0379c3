// `provider` of a parsed bounce: which mailbox provider answered, from the remote host, the reply text, the reporting
// host or the recipient's domain (src/core/providers/brands.ts); null when nothing names a known provider.
import fs from 'node:fs';
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { mailboxProvider } from '../../src/core/providers/index.js';

const sample = (name: string) => fs.readFileSync(new URL(`../fixtures/sisimai/bsd/${name}`, import.meta.url));

describe('parseReport: provider (which mailbox provider answered)', () => {
  it('names the provider of the remote host, then of a sign in the reply, then of the reporting host, then of the domain', () => {
    expect(mailboxProvider({ rhost: 'gmail-smtp-in.l.google.com', destination: 'example.org' })).to.equal('google');
    expect(mailboxProvider({ rhost: 'example-org.mail.protection.outlook.com' })).to.equal('microsoft');
    expect(mailboxProvider({ rhost: 'mta7.am0.yahoodns.net' })).to.equal('yahoo');
    expect(
      mailboxProvider({
        rhost: 'mx.example.org',
        text: '550 5.7.1 [TSS04] Messages from 192.0.2.1 temporarily deferred',
      }),
    ).to.equal('yahoo');
    expect(
      mailboxProvider({
        text: '550-5.7.26 Unauthenticated email ... https://support.google.com/mail/answer/81126 - gsmtp',
      }),
    ).to.equal('google');
    expect(mailboxProvider({ lhost: 'server-7.bemta-0.messagelabs.com', destination: 'example.org' })).to.equal(
      'messagelabs',
    );
    expect(mailboxProvider({ destination: 'icloud.com', text: '550 5.1.1 unknown user' })).to.equal('apple');
    // the remote host wins over the recipient's domain (a forward to another provider)
    expect(mailboxProvider({ rhost: 'mx1.mail.icloud.com', destination: 'gmail.com' })).to.equal('apple');
    expect(
      mailboxProvider({ rhost: 'mx.example.org', destination: 'example.org', text: '550 5.1.1 unknown' }),
    ).to.equal(null);
    // a suffix must match a whole label
    expect(mailboxProvider({ rhost: 'evilgoogle.com' })).to.equal(null);
  });

  it('is set on every recipient of a DSN', async () => {
    const cases: [string, string | null][] = [
      ['rhost-google-01.eml', 'google'],
      ['rhost-outlook-01.eml', 'microsoft'],
      ['rhost-yahooinc-01.eml', 'yahoo'],
      ['rhost-apple-01.eml', 'apple'],
      ['rhost-aol-01.eml', 'aol'],
      ['lhost-exim-01.eml', null],
    ];
    for (const [file, provider] of cases) {
      const r = await parseReport(sample(file));
      expect(r.recipients.length, file).to.be.greaterThan(0);
      for (const x of r.recipients) expect(x.provider, file).to.equal(provider);
    }
  });
});

describe('parseReport: a Postfix notice\'s "host X[addr] said:" is not the remote host (Sisimai\'s Postfix decoder)', () => {
  const reply = (host: string) =>
    `<kim@example.net>: host ${host}[192.0.2.7] said: 552 1 Requested mail action\n` +
    '    aborted, mailbox not found (in reply to end of DATA command)\n';
  const textOnly = (host: string) =>
    Buffer.from(
      'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\nTo: news@example.org\n' +
        'Date: Tue, 3 Mar 2026 10:00:00 +0000\nSubject: Undelivered Mail Returned to Sender\n' +
        'Content-Type: text/plain; charset=us-ascii\n\nThis is the mail system at host mx.example.org.\n\n' +
        "I'm sorry to have to inform you that your message could not\nbe delivered to one or more recipients.\n\n" +
        `                   The mail system\n\n${reply(host)}`,
    );
  const withRemoteMta = (host: string) =>
    Buffer.from(
      'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\nTo: news@example.org\n' +
        'Date: Tue, 3 Mar 2026 10:00:00 +0000\nSubject: Undelivered Mail Returned to Sender\nMIME-Version: 1.0\n' +
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"\n\n--b1\n' +
        'Content-Type: text/plain; charset=us-ascii\n\nThis is the mail system at host mx.example.org.\n\n' +
        `                   The mail system\n\n${reply(host)}\n--b1\nContent-Type: message/delivery-status\n\n` +
        'Reporting-MTA: dns; mx.example.org\n\nFinal-Recipient: rfc822; kim@example.net\nAction: failed\n' +
        `Status: 5.0.0\nRemote-MTA: dns; ${host}\nDiagnostic-Code: smtp; 552 1 Requested mail action aborted,\n` +
        '    mailbox not found\n\n--b1--\n',
    );

  it('reads the reply generically when the notice has no Remote-MTA (a user-unknown text after DATA: filtered)', async () => {
    const r = await parseReport(textOnly('mta5.am0.yahoodns.net'));
    expect(r.recipients.map((x) => [x.address, x.reason, x.hard])).to.deep.equal([
      ['kim@example.net', 'filtered', false],
    ]);
    // still named as the provider that answered
    expect(r.recipients[0]?.provider).to.equal('yahoo');
  });

  it("reads the remote host's table when a Remote-MTA names it (Yahoo's 'mailbox not found': userunknown)", async () => {
    const r = await parseReport(withRemoteMta('mta5.am0.yahoodns.net'));
    expect(r.recipients.map((x) => [x.address, x.reason, x.hard])).to.deep.equal([
      ['kim@example.net', 'userunknown', true],
    ]);
  });
});

describe('parseReport: a multi-line reply is read without its repeated code prefixes (Sisimai::Fact)', () => {
  const notice = (reply: string) =>
    Buffer.from(
      'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\nTo: news@example.org\n' +
        'Date: Tue, 3 Mar 2026 10:00:00 +0000\nSubject: Undelivered Mail Returned to Sender\n' +
        'Content-Type: text/plain; charset=us-ascii\n\nThis is the mail system at host mx.example.org.\n\n' +
        `                   The mail system\n\n<lee@example.net>: host mx.example.net[192.0.2.9] said:\n${reply}`,
    );

  it('finds a phrase split by "450-4.2.1" line prefixes (speeding), its status still read from the reply', async () => {
    const r = await parseReport(
      notice(
        '    450-4.2.1 The user you are trying to contact is receiving mail at a rate\n' +
          '    that 450-4.2.1 prevents additional messages from being delivered. Please\n' +
          '    resend your 450-4.2.1 message at a later time. (in reply to RCPT TO command)\n',
      ),
    );
    expect(r.recipients.map((x) => [x.address, x.reason, x.status, x.hard])).to.deep.equal([
      ['lee@example.net', 'speeding', '4.2.1', false],
    ]);
  });

  it('finds a phrase split by a bare "550-" prefix (hostunknown)', async () => {
    const r = await parseReport(
      notice(
        '    550-The mail server could not deliver mail to lee@example.net.  The account\n' +
          '    550-or domain may not exist, they may be blacklisted, or missing the proper\n' +
          '    dns 550 entries. (in reply to RCPT TO command)\n',
      ),
    );
    expect(r.recipients.map((x) => [x.address, x.reason, x.hard])).to.deep.equal([
      ['lee@example.net', 'hostunknown', true],
    ]);
  });
});
