// Audit finding 5: request bodies are read only after authentication and the rate limit, and a JSON body
// nested deeper than 64 levels is refused (json_too_deep) before JSON.parse builds it.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { jsonTooDeep } from '../../src/http/validate.js';
import { checkedFetch } from '../helpers/contract.js';

const DEEP = '['.repeat(1_000_000) + ']'.repeat(1_000_000); // 2 MB, no key inside
// With fetch (not TestService.api, which sends JSON it serializes itself); every answer checked against the document.
let checked: typeof fetch = fetch;
const post = (s: TestService, raw: string, key?: string) =>
  checked(`${s.url}/v1/emails`, {
    method: 'POST',
    body: raw,
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
  });

describe('security: bodies are parsed after authentication, nesting is bounded', function () {
  this.timeout(30_000);
  let s: TestService;
  let key: string;
  before(async () => {
    s = await startTestService({ env: { MTA_MAX_BODY_BYTES: String(3 * 1024 * 1024), MTA_RATE_LIMIT: '0' } });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read']);
    checked = checkedFetch(s.ctx);
    await post(s, '{}'); // the checker set up (its 401 schema compiled) outside the timed requests
  });
  after(() => s.close());

  it('counts depth outside strings only, in one pass', () => {
    expect(jsonTooDeep('['.repeat(64) + ']'.repeat(64))).to.equal(false);
    expect(jsonTooDeep('['.repeat(65) + ']'.repeat(65))).to.equal(true);
    expect(jsonTooDeep(JSON.stringify({ a: '['.repeat(500), b: '\\"[[[[' }))).to.equal(false);
    expect(jsonTooDeep(`{"a":"\\"${'{'.repeat(100)}"}`)).to.equal(false);
  });

  it('answers 401 to a 2 MB deeply nested body without a key, without parsing it', async () => {
    const t = Date.now();
    const r = await post(s, DEEP);
    expect(r.status).to.equal(401);
    expect((await r.json()).error.code).to.equal('missing_api_key');
    expect(Date.now() - t).to.be.below(500);
  });

  it('refuses it with a key: 422 json_too_deep, and 64 levels are still parsed', async () => {
    const r = await post(s, DEEP, key);
    expect(r.status).to.equal(422);
    expect((await r.json()).error).to.include({ type: 'validation_error', code: 'json_too_deep' });
    const ok = await post(
      s,
      JSON.stringify({
        from: 'a@example.com',
        to: 'b@example.org',
        subject: 's',
        text: 't',
        headers: null,
        tags: null,
      }),
      key,
    );
    expect(ok.status).to.equal(202);
    const inner = JSON.stringify({
      from: 'a@example.com',
      to: 'b@example.org',
      subject: 's',
      text: 't',
      x: JSON.parse('['.repeat(62) + ']'.repeat(62)),
    });
    const r64 = await post(s, inner, key); // 64 levels: parsed, then refused by the schema (unknown field)
    expect(r64.status).to.equal(422);
    expect((await r64.json()).error).to.include({ code: 'invalid_parameter', param: 'x' });
  });

  it('keeps /healthz fast while several such bodies arrive in parallel', async () => {
    const load = [...Array(6)].map((_, i) => post(s, DEEP, i % 2 ? key : undefined).then((r) => r.status));
    await new Promise((r) => setTimeout(r, 20));
    const t = Date.now();
    const h = await fetch(`${s.url}/healthz`);
    const ms = Date.now() - t;
    expect(h.status).to.equal(200);
    // The test's client shares this process's event loop with the service: 301 ms was seen in a CI dry run on a busy
    // 2-core box (session 18). Six unbounded parses of DEEP would hold the loop for seconds; 1 s still tells them apart.
    expect(ms).to.be.below(1000);
    expect(await Promise.all(load)).to.deep.equal([401, 422, 401, 422, 401, 422]);
  });

  it('does not read the body of an unauthenticated request before refusing it', async () => {
    // A body announced as 2 MB of which nothing is sent: the 401 comes without waiting for it.
    const http = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${s.url}/v1/emails`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(2 * 1024 * 1024) } },
        (res) => {
          resolve(res.statusCode!);
          res.resume();
          req.destroy();
        },
      );
      req.on('error', reject);
      req.write('{"from":');
      setTimeout(() => reject(new Error('no answer before the body was sent')), 2000);
    });
    expect(status).to.equal(401);
  });
});
