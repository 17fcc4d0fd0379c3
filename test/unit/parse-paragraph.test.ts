// paragraphFor (src/inbound/dsn.ts): the text of a human-readable notice about one recipient, and errorSection's end
// at a quoted copy of the original message.
import { expect } from 'chai';
import { paragraphFor } from '../../src/inbound/dsn.js';
import { errorSection } from '../../src/inbound/nonstandard.js';
import { parseReport } from '../../src/inbound/parse.js';

describe('paragraphFor', () => {
  it('reads the paragraph from the address line to a blank line', () => {
    const text = 'Hello.\n\n<a@example.com>: host mx.example.com said:\n  550 5.1.1 unknown user\n\nBye.\n';
    expect(paragraphFor(text, 'a@example.com', ['a@example.com'])).to.equal(
      '<a@example.com>: host mx.example.com said:   550 5.1.1 unknown user',
    );
  });

  it('reads the paragraphs on either side of an address that stands alone', () => {
    const text =
      'Your mail to the address\n\n   "b@example.com"\n\ncould not be delivered: the mailbox is over its quota.\n' +
      'Please try again later.\n\nThe first 20 lines of your original message follow:> Received: from x\n';
    expect(paragraphFor(errorSection(text), 'b@example.com', ['b@example.com'])).to.equal(
      'Your mail to the address    "b@example.com" could not be delivered: the mailbox is over its quota. ' +
        'Please try again later.',
    );
  });

  it('ends the error section at "The first N lines of your original message follow"', () => {
    const text = 'Failed: c@example.com\n\nThe first 50 lines of the original message follow:\n> To: c@example.com\n';
    expect(errorSection(text)).to.equal('Failed: c@example.com\n\n');
  });
});

describe('parseReport: a notice that names no recipient address', () => {
  it("takes the first address of the returned original's To: header", async () => {
    const notice = [
      'From: System Administrator <postmaster@example.net>',
      'To: sender@example.org',
      'Subject: Undeliverable: Minutes',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'Your message did not reach the following recipient(s):',
      '',
      'Jane Roe on Mon, 2 Mar 2026 10:00:00 +0100',
      '    The recipient was unavailable to take delivery of the message',
      '',
      '--b1',
      'Content-Type: message/rfc822',
      '',
      'From: sender@example.org',
      'To: Jane Roe <jane.roe@example.net>, other@example.net',
      'Subject: Minutes',
      '',
      'Hello.',
      '--b1--',
      '',
    ].join('\r\n');
    const r = await parseReport(Buffer.from(notice));
    expect(r.kind).to.equal('dsn');
    expect(r.recipients.map((x) => x.address)).to.deep.equal(['jane.roe@example.net']);
  });
});
