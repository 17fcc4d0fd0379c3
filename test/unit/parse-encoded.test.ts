// RFC 2047 encoded words and charsets in the inbound reader (libmime): adjacent words join ("éé", not "é é"), an
// encoded Subject still says "bounce", an encoded Diagnostic-Code reads as text; bad encodings never throw.
import { expect } from 'chai';
import { decodeWords, toText } from '../../src/inbound/mime.js';
import { parseReport } from '../../src/inbound/parse.js';

const EE = '=?UTF-8?B?w6k=?= =?UTF-8?B?w6k=?=';

describe('inbound reader: encoded words and charsets', () => {
  it('decodes adjacent encoded words without the space between them', () => {
    expect(decodeWords(EE)).to.equal('éé');
    expect(decodeWords('Undeliverable: =?ISO-8859-1?Q?caf=E9?=')).to.equal('Undeliverable: café');
    expect(decodeWords('no words here')).to.equal('no words here');
    expect(() => decodeWords('=?x-bogus?B?////?= =?UTF-8?Q?=ZZ?=')).not.to.throw();
  });

  it('reads bodies in their charset, an unknown one as UTF-8', () => {
    expect(toText(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'iso-8859-1')).to.equal('café');
    expect(toText(Buffer.from('café', 'utf8'), 'x-no-such-charset')).to.equal('café');
  });

  it('reads a DSN whose Subject and Diagnostic-Code are encoded words', async () => {
    const raw = [
      'From: Mail System <mail@mx.example.org>',
      'To: bounces+abc@bounce.example.com',
      'Subject: =?UTF-8?B?VW5kZWxpdmVyYWJsZTogw6nDqQ==?=',
      'Content-Type: text/plain; charset=utf-8',
      '',
      '<u@example.net>: host mx.example.net[192.0.2.1] said: 550 5.1.1 <u@example.net>: Recipient address',
      '    rejected: User unknown in local recipient table (in reply to RCPT TO command)',
      '',
    ].join('\r\n');
    // only the decoded Subject ("Undeliverable: éé") says this plain-text message is a bounce
    const plain = await parseReport(raw);
    expect(plain.kind).to.equal('dsn');
    expect(plain.recipients[0]).to.include({ address: 'u@example.net', reason: 'userunknown', hard: true });

    const dsn = [
      'From: MAILER-DAEMON@mx.example.org',
      `Subject: ${EE}`,
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
      '',
      '--b',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.example.org',
      '',
      'Final-Recipient: rfc822; u@example.net',
      'Action: failed',
      'Status: 5.1.1',
      `Diagnostic-Code: smtp; 550 5.1.1 ${EE} user unknown`,
      '',
      '--b--',
      '',
    ].join('\r\n');
    const r = (await parseReport(dsn)).recipients[0];
    expect(r).to.include({ address: 'u@example.net', reason: 'userunknown', diagnostic: '550 5.1.1 éé user unknown' });
  });
});
