// POST/GET /v1/emails against the real HTTP server and a real SQLite file: validation, errors,
// idempotency, credits, suppression, domains, pagination and cancel. Delivery features are off.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain, count } from '../helpers/factories.js';

const base = { from: 'Acme <hello@acme.test>', to: 'user@example.org', subject: 'Your code', text: '123456' };

describe('POST /v1/emails', () => {
  let s: TestService;
  let teamId: string;
  let testKey: string;
  let liveKey: string;
  before(async () => {
    s = await startTestService({ features: [], env: { MTA_RATE_LIMIT: '0' } });
    teamId = s.team('acme').id;
    testKey = s.key(teamId, 'test');
    liveKey = s.key(teamId, 'live');
    insertVerifiedDomain(s.db, teamId, 'acme.test');
  });
  after(() => s.close());

  it('queues a test email: 202 with the full Email object, stored and listed', async () => {
    const r = await s.api('POST', '/v1/emails', {
      key: testKey,
      body: {
        ...base,
        cc: ['c@example.org'],
        bcc: ['b@example.org'],
        tags: ['signin'],
        reply_to: 'r@acme.test',
        html: '<b>1</b>',
      },
    });
    expect(r.status).to.equal(202);
    const e = r.body;
    expect(e).to.include({
      object: 'email',
      from: base.from,
      subject: 'Your code',
      status: 'queued',
      test_mode: true,
      credits_charged: 0,
    });
    expect(e.id).to.match(/^em_[0-9a-z]{26}$/);
    expect(e.to).to.deep.equal(['user@example.org']);
    expect(e.cc).to.deep.equal(['c@example.org']);
    expect(e.bcc).to.deep.equal(['b@example.org']);
    expect(e.tags).to.deep.equal(['signin']);
    expect(new Date(e.created_at).toISOString()).to.equal(e.created_at);
    for (const f of [
      'object',
      'id',
      'from',
      'to',
      'cc',
      'bcc',
      'subject',
      'status',
      'test_mode',
      'tags',
      'credits_charged',
      'created_at',
    ])
      expect(e).to.have.property(f);
    expect((await s.api('GET', `/v1/emails/${e.id}`, { key: testKey })).body).to.deep.equal(e);
    const ev = await s.api('GET', `/v1/emails/${e.id}/events`, { key: testKey });
    expect(ev.body.object).to.equal('list');
    expect(ev.body.data[0]).to.include({ object: 'event', type: 'queued', recipient: null });
    expect(ev.body.data[0].id).to.match(/^evt_/);
    expect(count(s.db, 'deliveries', `email_seq = (SELECT seq FROM emails WHERE id = '${e.id}')`)).to.equal(3);
  });

  it('accepts nulls for optional fields and a single-string to', async () => {
    const r = await s.api('POST', '/v1/emails', {
      key: testKey,
      body: { ...base, cc: null, bcc: null, html: null, reply_to: null, tags: null, headers: null },
    });
    expect(r.status).to.equal(202);
    expect(r.body.cc).to.equal(null);
    expect(r.body.tags).to.equal(null);
  });

  const bad: [string, Record<string, unknown>, string, string?][] = [
    ['missing from', { from: undefined }, 'from'],
    ['missing to', { to: undefined }, 'to'],
    ['missing subject', { subject: undefined }, 'subject'],
    ['invalid from', { from: 'not an address' }, 'from'],
    ['from over 320 chars', { from: `${'a'.repeat(64)}@${'b'.repeat(250)}.test` }, 'from'],
    ['invalid to', { to: ['ok@example.org', 'nope'] }, 'to'],
    ['empty to list', { to: [] }, 'to'],
    ['invalid cc', { cc: ['x@'] }, 'cc'],
    ['invalid reply_to', { reply_to: 'x' }, 'reply_to'],
    ['subject over 998', { subject: 's'.repeat(999) }, 'subject'],
    ['subject with CRLF', { subject: 'a\r\nBcc: evil@example.org' }, 'subject'],
    ['11 tags', { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, 'tags'],
    ['tag over 256', { tags: ['t'.repeat(257)] }, 'tags'],
    ['21 headers', { headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])) }, 'headers'],
    ['reserved header', { headers: { From: 'x@y.z' } }, 'headers'],
    ['Content-Type header', { headers: { 'content-type': 'text/plain' } }, 'headers'],
    ['Reply-To header that is no address', { headers: { 'Reply-To': 'nobody' } }, 'headers'],
    ['Reply-To header and reply_to both', { headers: { 'Reply-To': 'a@x.test' }, reply_to: 'b@x.test' }, 'headers'],
    ['header value with CRLF', { headers: { 'X-A': 'v\r\nBcc: evil@example.org' } }, 'headers'],
    ['header name with colon', { headers: { 'X:A': 'v' } }, 'headers'],
    [
      '51 recipients',
      {
        to: Array.from({ length: 30 }, (_, i) => `u${i}@example.org`),
        cc: Array.from({ length: 21 }, (_, i) => `c${i}@example.org`),
      },
      'to',
    ],
    ['no body', { text: undefined }, 'html', 'missing_body'],
    ['empty bodies', { text: '', html: null }, 'html', 'missing_body'],
    ['wrong type', { tags: 'signin' }, 'tags'],
    ['unknown field', { attachment: [] }, 'attachment'],
    ['tracking not boolean', { tracking: { opens: 'yes' } }, 'tracking'],
    ['scheduled_at not a date', { scheduled_at: 'tomorrow' }, 'scheduled_at'],
    ['scheduled_at without a time zone', { scheduled_at: '2030-01-01T10:00:00' }, 'scheduled_at'],
    [
      'scheduled_at beyond 30 days',
      { scheduled_at: new Date(Date.now() + 31 * 86400e3).toISOString() },
      'scheduled_at',
    ],
  ];
  for (const [name, patch, param, code] of bad) {
    it(`refuses ${name} with 422 ${code ?? 'invalid_parameter'} naming ${param}, storing nothing`, async () => {
      const before = count(s.db, 'emails');
      const body = { ...base, ...patch };
      const r = await s.api('POST', '/v1/emails', { key: testKey, body: JSON.parse(JSON.stringify(body)) });
      expect(r.status, JSON.stringify(r.body)).to.equal(422);
      expect(r.body.error).to.include({ type: 'validation_error', code: code ?? 'invalid_parameter', param });
      expect(r.body.error.message).to.be.a('string').with.length.above(0);
      expect(r.body.error.doc_url).to.match(new RegExp(`/errors#${code ?? 'invalid_parameter'}$`));
      expect(count(s.db, 'emails')).to.equal(before);
    });
  }

  it('refuses bad JSON, non-object bodies and non-JSON content types with invalid_json', async () => {
    for (const [raw, type] of [
      ['{"from":', 'application/json'],
      ['[1,2]', 'application/json'],
      ['"x"', 'application/json'],
      ['from=a', 'application/x-www-form-urlencoded'],
    ]) {
      const r = await s.api('POST', '/v1/emails', { key: testKey, raw, headers: { 'content-type': type } });
      expect(r.status, raw).to.equal(422);
      expect(r.body.error).to.include({ type: 'validation_error', code: 'invalid_json' });
    }
  });

  it('refuses a body whose Content-Encoding does not decode with invalid_json, not a 500', async () => {
    for (const enc of ['gzip', 'deflate', 'br']) {
      const r = await s.api('POST', '/v1/emails', {
        key: testKey,
        raw: '{"not":"compressed"}',
        headers: { 'content-type': 'application/json', 'content-encoding': enc },
      });
      expect(r.status, enc).to.equal(422);
      expect(r.body.error, enc).to.include({ type: 'validation_error', code: 'invalid_json' });
    }
  });

  it('bounds the time a client may take for its headers (20 s) and its whole request (60 s)', () => {
    expect(s.svc.server.headersTimeout).to.be.within(1, 20_000);
    expect(s.svc.server.requestTimeout).to.be.within(1, 60_000);
  });

  it('refuses a body over the maximum with 413 request_too_large', async () => {
    const r = await s.api('POST', '/v1/emails', {
      key: testKey,
      body: { ...base, text: 'x'.repeat(40 * 1024 * 1024 + 10) }, // MTA_MAX_BODY_BYTES: 40 MiB by default
    });
    expect(r.status).to.equal(413);
    expect(r.body.error).to.include({ type: 'validation_error', code: 'request_too_large' });
  });

  it('takes a Reply-To header as reply_to, and passes other custom headers through', async () => {
    const r = await s.api('POST', '/v1/emails', {
      key: testKey,
      body: {
        ...base,
        headers: { 'reply-to': 'Help <help@acme.test>', Sender: 'ops@acme.test', 'X-Entity-Ref-ID': 'abc' },
      },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.reply_to).to.equal('Help <help@acme.test>');
    const row = s.db.prepare('SELECT headers_json FROM emails WHERE id = ?').get(r.body.id) as { headers_json: string };
    expect(JSON.parse(row.headers_json)).to.deep.equal({ Sender: 'ops@acme.test', 'X-Entity-Ref-ID': 'abc' });
  });

  it('accepts internationalised domains', async () => {
    const r = await s.api('POST', '/v1/emails', { key: testKey, body: { ...base, to: 'jörg@bücher.example' } });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(count(s.db, 'deliveries', "domain = 'xn--bcher-kva.example'")).to.equal(1);
  });

  it('requires a verified domain for live sends (domain_not_verified), subdomains of a verified domain pass', async () => {
    s.credits(teamId, 100);
    const r = await s.api('POST', '/v1/emails', { key: liveKey, body: { ...base, from: 'x@other.test' } });
    expect(r.status).to.equal(422);
    expect(r.body.error).to.include({ code: 'domain_not_verified', param: 'from' });
    const ok = await s.api('POST', '/v1/emails', { key: liveKey, body: { ...base, from: 'x@mail.acme.test' } });
    expect(ok.status).to.equal(202);
    expect(ok.body).to.include({ test_mode: false, credits_charged: 1 });
  });
});

describe('errors outside POST /emails', () => {
  let s: TestService;
  let key: string;
  before(async () => {
    s = await startTestService({
      features: [
        () => ({
          routes: [
            (r) => {
              r.get('/boom', () => {
                throw new Error('secret internals');
              });
            },
          ],
        }),
      ],
    });
    key = s.key(s.team().id);
  });
  after(() => s.close());

  it('unknown routes and methods are 404 route_not_found in the envelope', async () => {
    for (const [m, p] of [
      ['GET', '/v1/nope'],
      ['DELETE', '/v1/emails'],
      ['GET', '/elsewhere'],
    ]) {
      const r = await s.api(m, p, { key });
      expect(r.status, p).to.equal(404);
      expect(r.body.error).to.include({ type: 'not_found', code: 'route_not_found' });
    }
  });

  it('GET /v1/emails refuses an unknown query parameter with 422 invalid_parameter naming it, as /v1/stats does', async () => {
    for (const p of ['/v1/emails?htlm=1', '/v1/emails?status=queued&bogus=1', '/v1/stats?bogus=1']) {
      const r = await s.api('GET', p, { key });
      expect(r.status, p).to.equal(422);
      expect(r.body.error, p).to.include({ type: 'validation_error', code: 'invalid_parameter' });
      expect(r.body.error.param, p).to.be.oneOf(['htlm', 'bogus']);
    }
    expect((await s.api('GET', '/v1/emails?status=queued&limit=5&test_mode=true', { key })).status).to.equal(200);
  });

  it("every doc_url points at an entry of the service's own /docs/errors page", async () => {
    const r = await s.api('GET', '/v1/nope', { key });
    const url = new URL(r.body.error.doc_url);
    expect(url.pathname).to.equal('/docs/errors');
    expect(url.hash).to.equal('#route_not_found');
    const page = await fetch(s.url + url.pathname);
    expect(page.status).to.equal(200);
    const html = await page.text();
    for (const code of [
      'route_not_found',
      'missing_body',
      'domain_not_verified',
      'insufficient_credits',
      'internal_error',
    ])
      expect(html).to.contain(`id="${code}"`);
  });

  it('unexpected faults are 500 api_error internal_error and leak nothing', async () => {
    const r = await s.api('GET', '/v1/boom', { key });
    expect(r.status).to.equal(500);
    expect(r.body.error).to.include({ type: 'api_error', code: 'internal_error' });
    expect(JSON.stringify(r.body)).not.to.contain('secret internals');
  });

  it('unknown email ids are 404 email_not_found', async () => {
    const r = await s.api('GET', '/v1/emails/em_00000000000000000000000000', { key });
    expect(r.status).to.equal(404);
    expect(r.body.error).to.include({ type: 'not_found', code: 'email_not_found' });
  });
});
