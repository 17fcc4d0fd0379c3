// Issue 32, item 6, over the real HTTP listener: the dashboard's key sign-in takes from the client address's bucket
// of the API's authentication back-off. Many wrong keys from one address end in 429 with Retry-After; a right key
// from that address is refused too until the bucket refills; X-Forwarded-For from an untrusted peer changes
// nothing; the API's wrong-key answers share the bucket; another address signs in as usual.
import http from 'node:http';
import { expect } from 'chai';
import { startTestService, testClock, type TestService } from '../helpers/service.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { assertDescribed, parseBody } from '../helpers/contract.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One HTTP request from a chosen loopback source address (fetch cannot pick one). */
function request(
  url: string,
  o: { method?: string; headers?: Record<string, string>; body?: string; from?: string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: o.method ?? 'GET', headers: o.headers, localAddress: o.from }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** A key sign-in as a browser makes it: GET the form (its CSRF cookie and token), POST the key. */
async function signIn(base: string, key: string, from = '127.0.0.1', extra: Record<string, string> = {}) {
  const form = await request(`${base}/dashboard/sign-in`, { from, headers: extra });
  const cookie = (form.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form.text)![1];
  return request(`${base}/dashboard/sign-in`, {
    method: 'POST',
    from,
    headers: { ...extra, cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, key }).toString(),
  });
}
const session = (a: Answer) => (a.headers['set-cookie'] ?? []).some((c) => /^mta_session=[^;]+/.test(c));

describe('security: the dashboard key sign-in backs off like the API (issue 32)', function () {
  this.timeout(60_000);
  const clock = testClock();
  let s: TestService;
  let key: string;

  before(async () => {
    // One token every 20 s, a burst of 20: the bucket does not refill while the test runs, unless the clock moves.
    s = await startTestService({
      features: [dashboard],
      now: clock.now,
      env: { MTA_RATE_LIMIT: '0.05', MTA_RATE_BURST: '20' },
    });
    key = s.key(s.team().id, 'test', ['emails:read']);
  });
  after(() => s.close());

  it('answers 429 with Retry-After after many wrong keys from one address, then refuses a right key too', async () => {
    let first429 = 0;
    let refused: Answer | undefined;
    for (let i = 1; i <= 400 && !refused; i++) {
      const r = await signIn(s.url, `ps_test_wrong${i}`);
      if (r.status === 429) [first429, refused] = [i, r];
      else expect(r.status, `attempt ${i}`).to.equal(401);
    }
    expect(refused, 'some wrong key is refused with 429').to.not.equal(undefined);
    expect(first429).to.be.within(21, 25);
    expect(Number(refused!.headers['retry-after'])).to.be.at.least(1);
    expect(refused!.text).to.contain('Too many sign-in attempts');

    const right = await signIn(s.url, key);
    expect(right.status, 'a right key from the same address during the back-off').to.equal(429);
    expect(right.headers['retry-after']).to.match(/^\d+$/);
    expect(session(right)).to.equal(false);
    // No trusted proxy is configured: a forwarded address from this peer is not believed.
    const forged = await signIn(s.url, key, '127.0.0.1', { 'x-forwarded-for': '198.51.100.7' });
    expect(forged.status).to.equal(429);
    // The API's answer to a wrong key from this address takes from the same bucket.
    const api = await request(`${s.url}/v1/emails`, { headers: { authorization: 'Bearer ps_test_nope' } });
    expect(api.status).to.equal(429);
    assertDescribed(s.ctx, 'GET', `${s.url}/v1/emails`, api.status, parseBody(api.text)); // as documented
    expect(JSON.parse(api.text).error.type).to.equal('rate_limit_error');
    expect(api.headers['retry-after']).to.match(/^\d+$/);
  });

  it('lets another address sign in meanwhile, and this one once its bucket refilled', async () => {
    const other = await signIn(s.url, key, '127.0.0.2');
    expect(other.status).to.equal(303);
    expect(session(other)).to.equal(true);
    expect((await signIn(s.url, key)).status).to.equal(429);
    clock.advance(10 * 60_000);
    const later = await signIn(s.url, key);
    expect(later.status).to.equal(303);
    expect(session(later)).to.equal(true);
  });
});
