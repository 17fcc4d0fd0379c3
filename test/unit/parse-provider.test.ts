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
