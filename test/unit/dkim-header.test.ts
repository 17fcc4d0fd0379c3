// The DKIM header fast path (plainSigningHeader) against mailauth's canonicalisation and formatter: the same data to
// sign and the same DKIM-Signature header for every header block it takes, and it takes what the composer writes.
import { expect } from 'chai';
import MailComposer from 'nodemailer/lib/mail-composer';
import { plainSigningHeader } from '../../src/outbound/dkim-relaxed.js';
import { mailauthSigningHeader } from '../../src/outbound/dkim.js';
import { seededRandom } from '../helpers/random.js';

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const b64 = (next: () => number, n: number) =>
  Array.from({ length: n }, () => B64[Math.floor(next() * 64)]).join('') + '=';

/** Both paths for one header block; the fast one must answer and agree. */
function same(head: string, next: () => number, mustTake = true): boolean {
  const tags = {
    algorithm: next() < 0.5 ? ('rsa-sha256' as const) : ('ed25519-sha256' as const),
    domain: ['sender.test', 'mail.a-very-long-sending-domain-name-for-folding.example.co.uk', 'x.io'][
      Math.floor(next() * 3)
    ],
    selector: ['s1', 'mta202611', 'selector-with-a-long-name-2026'][Math.floor(next() * 3)],
    time: 1_700_000_000 + Math.floor(next() * 1e8),
    bodyHash: b64(next, 43),
  };
  const fast = plainSigningHeader(head, tags);
  if (fast === null) {
    if (mustTake) expect.fail(`fast path refused ${JSON.stringify(head.slice(0, 200))}`);
    return false;
  }
  const slow = mailauthSigningHeader(Buffer.from(head, 'latin1'), tags);
  const b = b64(next, tags.algorithm === 'rsa-sha256' ? 343 : 87);
  expect(fast.canonical).to.equal(slow.canonical, JSON.stringify(head));
  expect(fast.header(b)).to.equal(slow.header(b), JSON.stringify(head));
  return true;
}

const headOf = (raw: Buffer) => raw.subarray(0, raw.indexOf('\r\n\r\n') + 4).toString('latin1');

describe('DKIM header canonicalisation: fast path', () => {
  it('signs the header blocks the composer writes exactly as mailauth does', async () => {
    const next = seededRandom(7);
    const names = ['Ann', 'Zoë Ünïcode', 'A "quoted" name', 'Long Name '.repeat(8)];
    for (let i = 0; i < 300; i++) {
      const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)];
      const raw = await new MailComposer({
        from: { name: pick(names), address: 'app@sender.test' },
        to: Array.from({ length: 1 + Math.floor(next() * 6) }, (_, j) => ({
          name: pick(names),
          address: `u${j}@rcpt.test`,
        })),
        cc: next() < 0.3 ? 'c@rcpt.test' : undefined,
        replyTo: next() < 0.3 ? 'reply@sender.test' : undefined,
        subject: pick(['Hi', 'Receipt  #1 for   you', `Größe ${'very long subject '.repeat(6)}`, '\tTabbed']),
        text: 'x',
        html: next() < 0.5 ? '<p>y</p>' : undefined,
        headers:
          next() < 0.5
            ? { 'X-Campaign': 'a  b\tc', 'List-Unsubscribe': '<https://u.test/x>', 'In-Reply-To': '<a@b>' }
            : {},
        messageId: `<em_${i}@mta.test>`,
        date: new Date(1_700_000_000_000 + i * 1000),
      })
        .compile()
        .build();
      same(headOf(raw), next);
    }
  });

  it('agrees with mailauth on random header blocks, and refuses what it does not handle', () => {
    const next = seededRandom(11);
    const pieces = [
      'From',
      'from',
      'Subject',
      'To',
      'X-Other',
      'Cc',
      ':',
      ': ',
      ' ',
      '\t',
      'a',
      'b  c',
      '\r\n ',
      '\r\n\t',
      '\r\n',
      'é',
      '\n',
      '\r',
    ];
    let taken = 0;
    for (let i = 0; i < 5000; i++) {
      let head = '';
      const n = 1 + Math.floor(next() * 12);
      for (let j = 0; j < n; j++) head += pieces[Math.floor(next() * pieces.length)];
      head += '\r\n\r\n';
      if (same(head, next, false)) taken++;
    }
    expect(taken).to.be.greaterThan(1000);
    for (const head of ['Subject: caf\u00e9\r\n\r\n', 'Subject: a\nTo: b\r\n\r\n', 'Subject: a\rb\r\n\r\n'])
      expect(
        plainSigningHeader(head, { algorithm: 'rsa-sha256', domain: 'd.test', selector: 's', time: 1, bodyHash: 'x' }),
      ).to.equal(null);
  });
});
