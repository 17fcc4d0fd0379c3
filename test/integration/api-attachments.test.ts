// Attachments on POST /v1/emails: every limit of decisions.md "Attachments and batches" (nothing stored on a refusal),
// the Email's attachments list, bytes kept out of the hot tables, and delivery to a loopback MX (parts byte-identical, DKIM pass).
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth';
import { startTestService, type TestService } from '../helpers/service.js';
import { count } from '../helpers/factories.js';
import { outboundEnv, SENDER, type OutboundEnv } from './outbound-env.js';
import { createResolver } from '../../src/services/resolver.js';
import { preparedTexts } from '../../src/store/db.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const base = { from: 'Acme <hello@acme.test>', to: 'user@example.org', subject: 'Receipt', text: 'See attached.' };
const b64 = (b: Buffer) => b.toString('base64');

describe('POST /v1/emails with attachments', () => {
  let s: TestService;
  let key: string;
  before(async () => {
    s = await startTestService({ features: [], env: { MTA_RATE_LIMIT: '0', MTA_MAX_MESSAGE_BYTES: '200000' } });
    key = s.key(s.team().id, 'test');
  });
  after(() => s.close());

  const send = (body: Record<string, unknown>) => s.api('POST', '/v1/emails', { key, body: { ...base, ...body } });
  async function refused(body: Record<string, unknown>, status: number, code: string, param?: string) {
    const before = [count(s.db, 'emails'), count(s.db, 'email_attachments')];
    const r = await send(body);
    expect(r.status, JSON.stringify(r.body)).to.equal(status);
    expect(r.body.error.code).to.equal(code);
    if (param) expect(r.body.error.param).to.equal(param);
    expect([count(s.db, 'emails'), count(s.db, 'email_attachments')], 'nothing stored').to.deep.equal(before);
  }

  it('reports the attachments on the Email (type from the extension, decoded size); none is an empty list', async () => {
    const pdf = randomBytes(1000);
    const r = await send({
      attachments: [
        { filename: 'invoice.pdf', content: b64(pdf) },
        { filename: 'logo', content: b64(Buffer.from('png')), content_type: 'image/png', content_id: 'logo1' },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.attachments).to.deep.equal([
      { filename: 'invoice.pdf', content_type: 'application/pdf', size: 1000 },
      { filename: 'logo', content_type: 'image/png', size: 3 },
    ]);
    expect((await s.api('GET', `/v1/emails/${r.body.id}`, { key })).body.attachments).to.deep.equal(r.body.attachments);
    expect((await send({})).body.attachments).to.deep.equal([]);
    const stored = s.db.prepare('SELECT content FROM email_attachments ORDER BY id').pluck().all() as Buffer[];
    expect(sha(stored[0])).to.equal(sha(pdf));
  });

  it('keeps the bytes out of the hot tables: lists never read email_attachments or email_messages', async () => {
    await send({ attachments: [{ filename: 'a.txt', content: b64(Buffer.alloc(5000, 'a')) }] });
    const list = await s.api('GET', '/v1/emails?limit=100', { key });
    expect(list.body.data[0].attachments).to.deep.equal([
      { filename: 'a.txt', content_type: 'text/plain', size: 5000 },
    ]);
    const readers = preparedTexts(s.db).filter((t) => /email_(attachments|messages)/.test(t) && !/^INSERT/.test(t));
    expect(readers, 'no statement read the bytes').to.deep.equal([]);
    const row = s.db.prepare('SELECT * FROM emails ORDER BY seq DESC LIMIT 1').get() as Record<string, unknown>;
    expect(JSON.stringify(row).length, 'the email row holds no attachment bytes').to.be.below(1500);
  });

  it('refuses every limit with the field at fault, storing nothing', async () => {
    const one = { filename: 'a.txt', content: b64(Buffer.from('hi')) };
    await refused({ attachments: new Array(21).fill(one) }, 422, 'invalid_parameter', 'attachments');
    await refused(
      { attachments: [one, { ...one, content: 'not base64!' }] },
      422,
      'invalid_parameter',
      'attachments[1].content',
    );
    await refused({ attachments: [{ ...one, content: 'aGk' }] }, 422, 'invalid_parameter', 'attachments[0].content');
    await refused({ attachments: [{ ...one, filename: '' }] }, 422, 'invalid_parameter', 'attachments[0].filename');
    await refused(
      { attachments: [{ ...one, filename: '../etc/passwd' }] },
      422,
      'invalid_parameter',
      'attachments[0].filename',
    );
    await refused(
      { attachments: [{ ...one, filename: 'a\r\nb' }] },
      422,
      'invalid_parameter',
      'attachments[0].filename',
    );
    await refused(
      { attachments: [{ ...one, filename: 'x'.repeat(256) }] },
      422,
      'invalid_parameter',
      'attachments[0].filename',
    );
    await refused(
      { attachments: [{ ...one, content_id: '<cid>' }] },
      422,
      'invalid_parameter',
      'attachments[0].content_id',
    );
    await refused(
      { attachments: [{ ...one, content_type: 'text/html\r\nX: y' }] },
      422,
      'invalid_parameter',
      'attachments[0].content_type',
    );
    await refused({ attachments: [{ ...one, extra: 1 }] }, 422, 'invalid_parameter');
    // MTA_MAX_MESSAGE_BYTES is 200,000 here: 150,000 bytes are 200,000+ once base64-encoded.
    await refused({ attachments: [{ ...one, content: b64(randomBytes(150_000)) }] }, 413, 'request_too_large');
    await refused({ text: 'x'.repeat(199_000) }, 413, 'request_too_large');
    expect((await send({ attachments: [{ ...one, content: b64(randomBytes(100_000)) }] })).status).to.equal(202);
  });

  it('accepts base64 wrapped in lines (as MIME tools write it)', async () => {
    const data = randomBytes(300);
    const wrapped = b64(data).replace(/.{76}/g, '$&\r\n');
    const r = await send({ attachments: [{ filename: 'd.bin', content: wrapped }] });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.attachments[0].size).to.equal(300);
  });
});

describe('delivering an email with attachments', function () {
  this.timeout(20_000);
  let e: OutboundEnv;
  before(async () => {
    e = await outboundEnv();
  });
  after(() => e.close());

  it('sends the parts byte-identical, the inline image by cid, DKIM-valid', async () => {
    const big = randomBytes(3 * 1024 * 1024);
    const png = randomBytes(2048);
    const sent = await e.send({
      to: 'ann@rcpt.test',
      html: '<p>Logo: <img src="cid:logo@acme"></p>',
      attachments: [
        { filename: 'data.bin', content: b64(big), content_type: 'application/octet-stream' },
        { filename: 'logo.png', content: b64(png), content_id: 'logo@acme' },
      ],
    });
    await e.waitStatus(sent.id, ['delivered'], 15_000);
    const msg = e.mx.to('ann@rcpt.test')[0];
    const parsed = await simpleParser(msg.raw);
    const byName = Object.fromEntries(parsed.attachments.map((a) => [a.filename, a]));
    expect(sha(byName['data.bin'].content)).to.equal(sha(big));
    expect(sha(byName['logo.png'].content)).to.equal(sha(png));
    expect(byName['logo.png'].contentId).to.equal('<logo@acme>');
    expect(byName['logo.png'].contentDisposition).to.equal('inline');
    expect(byName['logo.png'].contentType).to.equal('image/png');
    const r = createResolver({ dnsServers: [e.dns.server] });
    const v = await dkimVerify(msg.raw, {
      resolver: (name: string, type: string) => r.resolve(name, type as 'TXT') as any,
    });
    expect(v.results[0].status.result, JSON.stringify(v.results[0].status)).to.equal('pass');
    expect(v.results[0].signingDomain).to.equal(SENDER);
  });
});
