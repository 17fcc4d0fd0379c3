// paragraphFor (src/inbound/dsn.ts): the text of a human-readable notice about one recipient, and errorSection's end
// at a quoted copy of the original message.
import { expect } from 'chai';
import { paragraphFor } from '../../src/inbound/dsn.js';
import { errorSection } from '../../src/inbound/nonstandard.js';

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
