// buildSync (src/lib/mime-sync.ts) must make exactly the bytes nodemailer's streaming MimeNode.build() makes,
// for every message the composer builds: compared byte for byte on one compiled tree, over varied messages
// (ASCII and not, long lines, trailing spaces, bare CR/LF, empty parts, attachments, inline parts, custom headers).
import crypto from 'node:crypto';
import { expect } from 'chai';
import MailComposer from 'nodemailer/lib/mail-composer';
import { buildSync, type MimeTree } from '../../src/lib/mime-sync.js';
import { composeRaw } from '../../src/outbound/message.js';

const texts = [
  'Your code is 123456',
  'Thanks for your order 42.\n'.repeat(10),
  'Grüße aus Köln — ça va? 你好 🎉\nSecond line',
  'x'.repeat(80) + '\n' + 'y'.repeat(1200),
  'trailing space \nand tab\t\nend ',
  'lone\rcarriage and\r\nwindows\nunix',
  '.leading dot\n..two\nFrom the start',
  '',
  'é'.repeat(300),
  '=3D already looks encoded =\n',
];
const htmls = [
  undefined,
  '<p>Your code is <b>123456</b></p>',
  '<p>Thanks for your order <b>42</b>.</p>'.repeat(10),
  '<p>Grüße 🎉</p>' + '<div>' + 'z'.repeat(2000) + '</div>',
  '',
];

function mail(i: number) {
  const t = texts[i % texts.length];
  const h = htmls[Math.floor(i / texts.length) % htmls.length];
  return {
    from: { name: i % 3 ? 'Bench App' : 'Ünïcode Sender', address: 'app@sender.example' },
    to: [{ name: '', address: `user${i}@example.com` }, ...(i % 4 ? [] : [{ name: 'Zoë', address: 'z@example.org' }])],
    cc: i % 5 ? undefined : [{ name: 'Carbon', address: 'cc@example.net' }],
    replyTo: i % 6 ? undefined : { name: 'Reply', address: 'reply@example.com' },
    sender: i % 7 ? undefined : { name: 'On behalf', address: 'sender@sender.example' },
    subject: i % 2 ? `Receipt #${i}` : `Ihre Bestellung №${i} — ${'lång '.repeat(i % 20)}`,
    text: t === '' && i % 2 ? undefined : t,
    html: h,
    headers: i % 3 ? undefined : { 'X-Campaign': `c${i}`, 'List-Unsubscribe': '<https://example.com/u>' },
    attachments:
      i % 8
        ? undefined
        : [
            { filename: 'a.txt', content: Buffer.from('hello attachment\n'.repeat(20)), contentType: 'text/plain' },
            {
              filename: 'p.png',
              content: Buffer.alloc(300, i),
              contentType: 'image/png',
              cid: 'logo',
              contentDisposition: 'inline' as const,
            },
          ],
    messageId: `<em_${i}@mta.example>`,
    date: new Date(1_790_000_000_000 + i),
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

describe('mime-sync: the synchronous build equals the streamed one', () => {
  it('byte for byte over 300 varied messages', async () => {
    let fast = 0;
    for (let i = 0; i < 300; i++) {
      const root = new MailComposer(mail(i)).compile();
      const sync = buildSync(root as unknown as MimeTree);
      const streamed = await root.build();
      if (sync === null) continue;
      fast++;
      expect(sync.toString('latin1'), `message ${i}`).to.equal(streamed.toString('latin1'));
    }
    expect(fast, 'messages built synchronously').to.equal(300);
  });

  it("children take their root's boundary base: no random bytes drawn for them, no byte of a message changed", () => {
    type Node = { baseBoundary?: string; childNodes: Node[] };
    const all = (n: Node): Node[] => [n, ...n.childNodes.flatMap(all)];
    const draw = crypto.randomBytes;
    let drawn = 0;
    (crypto as { randomBytes: unknown }).randomBytes = (...args: unknown[]) => {
      drawn++;
      return (draw as (...a: unknown[]) => Buffer)(...args);
    };
    try {
      for (let i = 0; i < 40; i++) {
        drawn = 0;
        const root = new MailComposer({ ...mail(i), baseBoundary: 'fixedbase' }).compile() as unknown as Node;
        expect(drawn, `message ${i}`).to.equal(0);
        const before = buildSync(root as unknown as MimeTree)!.toString('latin1');
        // what a child's own base is never changes the bytes (the premise of taking the parent's)
        for (const n of all(root).slice(1)) n.baseBoundary = draw(8).toString('hex');
        expect(buildSync(root as unknown as MimeTree)!.toString('latin1'), `message ${i}`).to.equal(before);
      }
    } finally {
      (crypto as { randomBytes: unknown }).randomBytes = draw;
    }
  });

  it('refuses a tree it cannot build (a stream content) and composeRaw still gives the message', async () => {
    const { Readable } = await import('node:stream');
    const root = new MailComposer({
      from: 'a@example.com',
      to: 'b@example.com',
      text: Readable.from(['streamed body']) as never,
    }).compile();
    expect(buildSync(root as unknown as MimeTree)).to.equal(null);
    const raw = await composeRaw(
      {
        id: 'em_x',
        from_addr: 'App <app@sender.example>',
        to_json: JSON.stringify(['user@example.com']),
        cc_json: null,
        reply_to: null,
        subject: 'Hi',
        text: 'Hello',
        headers_json: null,
        scheduled_at: null,
        created_at: 1_790_000_000_000,
      },
      '<p>Hello</p>',
      'mta.example',
    );
    const s = raw.toString();
    expect(s).to.match(/\r\nContent-Type: multipart\/alternative;\r\n boundary="--_NmP-[0-9a-f]{16}-Part_1"\r\n/);
    expect(s).to.contain('Message-ID: <em_x@mta.example>\r\n');
    expect(s.endsWith('--\r\n')).to.equal(true);
  });
});
