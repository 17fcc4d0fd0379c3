// The DKIM relaxed body hash's fast path (plainBodyHash) against mailauth's canonicaliser: the same hash for every
// body it takes, and it takes what the composer writes.
import { expect } from 'chai';
import MailComposer from 'nodemailer/lib/mail-composer';
import { mailauthBodyHash } from '../../src/outbound/dkim.js';
import { plainBodyHash } from '../../src/outbound/dkim-relaxed.js';
import { seededRandom } from '../helpers/random.js';

const PIECES = ['a', 'bc', ' ', '  ', '\t', '\r', '\n', '\r\n', '\r\n', '\r\n\r\n', '.', '=', 'é', ' \r\n'];

describe('DKIM relaxed body hash: fast path', () => {
  it('hashes every body it takes exactly as mailauth does (20,000 random bodies)', () => {
    const next = seededRandom(42);
    let taken = 0;
    for (let i = 0; i < 20_000; i++) {
      const parts: string[] = [];
      const len = Math.floor(next() * 24);
      for (let j = 0; j < len; j++) parts.push(PIECES[Math.floor(next() * PIECES.length)]);
      if (next() < 0.7) parts.push('\r\n'); // most bodies end with a line end, as composed ones do
      const body = Buffer.from(parts.join(''));
      const fast = plainBodyHash(body);
      if (fast === null) continue;
      taken++;
      expect(fast).to.equal(mailauthBodyHash(body), JSON.stringify(body.toString()));
    }
    expect(taken).to.be.greaterThan(1000); // the comparison covered many bodies, not a few
  });

  it('takes the bodies the composer writes (quoted-printable, base64, 7bit with LF line ends, multipart)', async () => {
    const messages = [
      { text: 'Thanks for your order 1.\n'.repeat(10), html: '<p>Thanks for your order <b>1</b>.</p>'.repeat(10) },
      { text: `caf\u00e9 ${'long line '.repeat(30)}\n\n\n` },
      { html: '<p>x</p>', attachments: [{ filename: 'a.bin', content: Buffer.alloc(3000, 7) }] },
      { text: '' },
    ];
    for (const m of messages) {
      const raw = await new MailComposer({ from: 'a@example.com', to: 'b@example.org', subject: 's', ...m })
        .compile()
        .build();
      const body = raw.subarray(raw.indexOf('\r\n\r\n') + 4);
      const fast = plainBodyHash(body);
      expect(fast, body.toString().slice(0, 80)).to.be.a('string');
      expect(fast).to.equal(mailauthBodyHash(body));
    }
    expect(plainBodyHash(Buffer.from('\r\n\r\n'))).to.equal(mailauthBodyHash(Buffer.from('\r\n\r\n')));
  });

  it('leaves what canonicalisation rewrites to mailauth', () => {
    for (const body of ['a\tb\r\n', 'a  b\r\n', 'a \r\n', 'a \nb\n', 'a\rb\r\n', 'a\r\r\n', 'a\r\nb'])
      expect(plainBodyHash(Buffer.from(body)), JSON.stringify(body)).to.equal(null);
  });
});
