// Issue 32, item 5: request bodies being read or parsed at once share one budget (MTA_MAX_INFLIGHT_BODY_BYTES) across
// the HTTP API and SMTP submission. Past it: 503 api_error/server_busy with Retry-After, or 451 4.3.2 over SMTP; the
// budget comes back on every path (answered, refused, invalid, aborted). Here the budget is 1 MiB and bodies 700 kB.
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as submission } from '../../src/features/submission.js';
import { bodyBudget } from '../../src/services/body-budget.js';
import { submissionPort, waitFor } from './submission-env.js';
import { assertDescribed, parseBody } from '../helpers/contract.js';

const BUDGET = 1024 * 1024;
const SIZE = 700_000;

/** A JSON email of exactly `size` bytes (its text padded). */
function emailOfSize(size: number, extra: Record<string, unknown> = {}): string {
  const base = { from: 'a@acme.test', to: 'b@example.org', subject: 'big', ...extra, text: '' };
  return JSON.stringify({ ...base, text: 'x'.repeat(size - JSON.stringify(base).length) });
}

interface Answer {
  status: number;
  code?: string;
  type?: string;
  retryAfter?: string;
}

/** A POST whose headers (Content-Length `length`) and first bytes are sent now; the rest when asked. */
function upload(s: TestService, key: string, length: number, headers: Record<string, string> = {}) {
  const req = http.request(`${s.url}/v1/emails`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(length >= 0 ? { 'content-length': String(length) } : {}),
      ...headers,
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        try {
          assertDescribed(s.ctx, 'POST', `${s.url}/v1/emails`, res.statusCode!, parseBody(text)); // as documented
        } catch (e) {
          return reject(e as Error);
        }
        const err = text ? JSON.parse(text).error : undefined;
        resolve({ status: res.statusCode!, code: err?.code, type: err?.type, retryAfter: res.headers['retry-after'] });
      });
    });
    req.on('error', reject);
  });
  answer.catch(() => {}); // an aborted upload's answer is never read
  return { req, answer, write: (s: string) => void req.write(s), end: (s: string) => (req.end(s), answer) };
}

/** Sends the whole body at once. */
const post = (s: TestService, key: string, body: string) => upload(s, key, Buffer.byteLength(body)).end(body);

/** A raw SMTP client signed in with `key` (plain AUTH from loopback). */
async function smtp(port: number, key: string) {
  const sock = net.connect(port, '127.0.0.1');
  let got = '';
  sock.on('data', (d) => (got += d.toString()));
  sock.on('error', () => {});
  const until = async (re: RegExp) => {
    await waitFor(`${re} in ${JSON.stringify(got.slice(-200))}`, () => (re.test(got) ? true : undefined), 10_000);
    const line = re.exec(got)![0];
    got = '';
    return line;
  };
  const say = (line: string, re: RegExp) => (sock.write(`${line}\r\n`), until(re));
  await until(/^220 .*\r\n/);
  await say('EHLO client.test', /250 .*\r\n$/);
  await say(`AUTH PLAIN ${Buffer.from(`\0apikey\0${key}`).toString('base64')}`, /^235 .*\r\n/);
  return { sock, until, say, write: (s: string) => void sock.write(s) };
}

/** A message of about `size` bytes (lines of 78), then the end of DATA. */
function MESSAGE(size: number): string {
  const head = 'From: a@acme.test\r\nTo: b@example.org\r\nSubject: big\r\n\r\n';
  return head + `${'y'.repeat(76)}\r\n`.repeat(Math.ceil((size - head.length) / 78)) + '.\r\n';
}

describe('security: the in-flight body budget (HTTP and SMTP submission)', function () {
  this.timeout(60_000);
  let s: TestService;
  let key: string;
  let port: number;
  const inUse = () => bodyBudget(s.ctx).inUse;
  const emails = async () => (await s.api('GET', '/v1/emails?limit=100', { key })).body.data.length as number;
  const holding = (n: number) => waitFor(`${n} bytes held`, () => (inUse() >= n ? true : undefined));
  const released = () => waitFor('the budget back', () => (inUse() === 0 ? true : undefined));

  before(async () => {
    s = await startTestService({
      features: [submission],
      env: {
        MTA_MAX_INFLIGHT_BODY_BYTES: String(BUDGET),
        MTA_MAX_BODY_BYTES: String(3 * 1024 * 1024),
        MTA_RATE_LIMIT: '0',
      },
    });
    key = s.key(s.team().id, 'test');
    port = submissionPort({ s });
  });
  after(() => s.close());

  it('answers 503 server_busy with Retry-After past the budget while another body is being read', async () => {
    const body = emailOfSize(SIZE);
    const slow = upload(s, key, SIZE);
    slow.write(body.slice(0, 1000));
    await holding(SIZE);
    const before = await emails();
    const refused = await post(s, key, body);
    expect(refused).to.deep.include({ status: 503, type: 'api_error', code: 'server_busy', retryAfter: '1' });
    // a small body still fits beside the slow one
    expect((await post(s, key, emailOfSize(2000))).status).to.equal(202);
    expect((await slow.end(body.slice(1000))).status).to.equal(202);
    await released();
    expect((await post(s, key, body)).status).to.equal(202);
    expect(await emails()).to.equal(before + 3); // the refused one stored nothing
    expect(inUse()).to.equal(0);
  });

  it('gives the budget back after an aborted upload, an invalid body, a 422, a 413, a chunked or compressed body past it', async () => {
    const ok = async () => expect((await post(s, key, emailOfSize(SIZE))).status).to.equal(202);
    const aborted = upload(s, key, SIZE);
    aborted.write(emailOfSize(SIZE).slice(0, 1000));
    await holding(SIZE);
    aborted.req.destroy();
    await released();
    await ok();

    const bad = await post(s, key, `{"from":"${'x'.repeat(SIZE)}`);
    expect(bad).to.include({ status: 422, code: 'invalid_json' });
    await ok();
    const unknown = await post(s, key, emailOfSize(SIZE, { nope: 1 }));
    expect(unknown).to.include({ status: 422, code: 'invalid_parameter' });
    await ok();
    const huge = upload(s, key, 4 * 1024 * 1024);
    huge.write('{');
    expect(await huge.answer).to.include({ status: 413, code: 'request_too_large' });
    huge.req.destroy();
    await ok();

    // chunked (no Content-Length): counted as read, refused once past the budget
    const chunked = upload(s, key, -1);
    const big = emailOfSize(BUDGET + 200_000);
    for (let i = 0; i < big.length; i += 100_000) chunked.write(big.slice(i, i + 100_000));
    expect(await chunked.answer).to.deep.include({ status: 503, code: 'server_busy', retryAfter: '1' });
    chunked.req.destroy();
    await released();
    await ok();

    // compressed: what it decompresses to is counted
    const small = gzipSync(emailOfSize(SIZE));
    const accepted = upload(s, key, small.length, { 'content-encoding': 'gzip' });
    accepted.req.end(small);
    expect((await accepted.answer).status).to.equal(202);
    const bomb = gzipSync(emailOfSize(BUDGET + 200_000));
    const refused = upload(s, key, bomb.length, { 'content-encoding': 'gzip' });
    refused.req.end(bomb);
    expect(await refused.answer).to.include({ status: 503, code: 'server_busy' });
    await released();
    await ok();
    expect(inUse()).to.equal(0);
  });

  it('over SMTP: 451 4.3.2 for a MAIL FROM SIZE= or a DATA past the budget another body holds; then accepted', async () => {
    const before = await emails();
    // an HTTP upload holds 700 kB
    const slow = upload(s, key, SIZE);
    const body = emailOfSize(SIZE);
    slow.write(body.slice(0, 1000));
    await holding(SIZE);
    const a = await smtp(port, key);
    expect(await a.say(`MAIL FROM:<a@acme.test> SIZE=${SIZE}`, /^\d{3} .*\r\n/)).to.match(/^451 4\.3\.2 /);
    await a.say('MAIL FROM:<a@acme.test>', /^250 /);
    await a.say('RCPT TO:<b@example.org>', /^250 /);
    await a.say('DATA', /^354 /);
    a.write(MESSAGE(600_000));
    expect(await a.until(/^\d{3} .*\r\n/)).to.match(/^451 4\.3\.2 .*nothing was stored/);
    expect((await slow.end(body.slice(1000))).status).to.equal(202);
    await released();

    // an SMTP DATA in progress (SIZE declared) holds its 700 kB: an HTTP body and another session's DATA are refused
    const b = await smtp(port, key);
    await b.say(`MAIL FROM:<a@acme.test> SIZE=${SIZE}`, /^250 /);
    await b.say('RCPT TO:<b@example.org>', /^250 /);
    await b.say('DATA', /^354 /);
    const held = MESSAGE(SIZE);
    b.write(held.slice(0, 1000));
    await holding(SIZE);
    expect(await post(s, key, body)).to.include({ status: 503, code: 'server_busy' });
    await a.say('MAIL FROM:<a@acme.test>', /^250 /);
    await a.say('RCPT TO:<b@example.org>', /^250 /);
    await a.say('DATA', /^354 /);
    a.write(MESSAGE(600_000));
    expect(await a.until(/^\d{3} .*\r\n/)).to.match(/^451 4\.3\.2 /);
    b.write(held.slice(1000));
    expect(await b.until(/^\d{3} .*\r\n/)).to.match(/^250 2\.0\.0 Ok: queued as em_/);
    await released();

    // a session that goes away in the middle of DATA gives its part back
    await b.say(`MAIL FROM:<a@acme.test> SIZE=${SIZE}`, /^250 /);
    await b.say('RCPT TO:<b@example.org>', /^250 /);
    await b.say('DATA', /^354 /);
    b.write(held.slice(0, 1000));
    await holding(SIZE);
    b.sock.destroy();
    await released();
    await a.say('MAIL FROM:<a@acme.test>', /^250 /);
    await a.say('RCPT TO:<b@example.org>', /^250 /);
    await a.say('DATA', /^354 /);
    a.write(MESSAGE(600_000));
    expect(await a.until(/^\d{3} .*\r\n/)).to.match(/^250 2\.0\.0 /);
    expect(await emails()).to.equal(before + 3); // the HTTP upload and two messages; nothing of the refused ones
    a.sock.destroy();
  });
});
