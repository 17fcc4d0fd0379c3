// POST /v1/emails/batch: 1 to 100 emails, all-or-nothing validation with the item's index in `param`, one credit check
// for the total, one transaction, one Idempotency-Key; 202 with the Emails in request order.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain, count } from '../helpers/factories.js';

const item = (i: number) => ({ from: 'Acme <hello@acme.test>', to: `u${i}@example.org`, subject: `n${i}`, text: 'hi' });
const items = (n: number) => Array.from({ length: n }, (_, i) => item(i));

describe('POST /v1/emails/batch', () => {
  let s: TestService;
  let teamId: string;
  let testKey: string;
  let liveKey: string;
  before(async () => {
    s = await startTestService({ features: [], env: { MTA_RATE_LIMIT: '0' }, overrides: { freeMonthlyCredits: 0 } });
    teamId = s.team().id;
    testKey = s.key(teamId, 'test');
    liveKey = s.key(teamId, 'live');
    insertVerifiedDomain(s.db, teamId, 'acme.test');
  });
  after(() => s.close());

  const post = (body: unknown, key = testKey, headers: Record<string, string> = {}) =>
    s.api('POST', '/v1/emails/batch', { key, body, headers });
  const stored = () => [count(s.db, 'emails'), count(s.db, 'deliveries'), count(s.db, 'credit_ledger')];
  async function refused(body: unknown, status: number, code: string, param?: string, key = testKey) {
    const before = stored();
    const r = await post(body, key);
    expect(r.status, JSON.stringify(r.body)).to.equal(status);
    expect(r.body.error.code).to.equal(code);
    if (param !== undefined) expect(r.body.error.param).to.equal(param);
    expect(stored(), 'nothing stored').to.deep.equal(before);
    return r.body.error;
  }

  it('queues every email and answers them in request order', async () => {
    const r = await post(items(3));
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.object).to.equal('list');
    expect(r.body.data.map((e: any) => e.subject)).to.deep.equal(['n0', 'n1', 'n2']);
    expect(new Set(r.body.data.map((e: any) => e.id)).size).to.equal(3);
    for (const e of r.body.data) {
      const got = await s.api('GET', `/v1/emails/${e.id}`, { key: testKey });
      expect(got.body).to.deep.equal(e);
    }
  });

  it('takes 100 emails, refuses 0, 101 or a body that is not an array', async () => {
    const r = await post(items(100));
    expect(r.status).to.equal(202);
    expect(r.body.data).to.have.length(100);
    await refused([], 422, 'invalid_parameter');
    await refused(items(101), 422, 'invalid_parameter');
    await refused(item(0), 422, 'invalid_json');
  });

  it('refuses the whole batch when one item is invalid, naming it', async () => {
    await refused([item(0), item(1), { ...item(2), to: 'not an address' }], 422, 'invalid_parameter', '[2].to');
    await refused([item(0), { ...item(1), text: undefined }], 422, 'missing_body', '[1].html');
    await refused([item(0), { ...item(1), bogus: 1 }], 422, 'invalid_parameter', '[1].bogus');
    await refused([item(0), 'x'], 422, 'invalid_parameter', '[1]');
    const att = { filename: 'a.txt', content: '!!' };
    await refused([{ ...item(0), attachments: [att] }], 422, 'invalid_parameter', '[0].attachments[0].content');
    const err = await refused(
      [item(0), { ...item(1), from: 'x@unverified.test' }],
      422,
      'domain_not_verified',
      '[1].from',
      liveKey,
    );
    expect(err.message).to.match(/^Item 1: /);
  });

  it('checks credits once for the total: 402 and nothing charged when the batch does not fit', async () => {
    const team = s.team();
    const live = s.key(team.id, 'live');
    insertVerifiedDomain(s.db, team.id, 'acme.test');
    s.credits(team.id, 5);
    const before = (await s.api('GET', '/v1/credits', { key: live })).body;
    const many = [{ ...item(0), cc: ['a@example.org', 'b@example.org'] }, item(1), item(2), item(3)]; // 6 recipients
    const err = await refused(many, 402, 'insufficient_credits', undefined, live);
    expect(err.message).to.include('needs 6').and.include('5 are available');
    expect((await s.api('GET', '/v1/credits', { key: live })).body).to.deep.equal(before);
    const ok = await post(many.slice(1).concat([item(4), item(5)]), live);
    expect(ok.status, JSON.stringify(ok.body)).to.equal(202);
    expect(ok.body.data.every((e: any) => e.credits_charged === 1)).to.equal(true);
  });

  it('one Idempotency-Key covers the batch: replayed as a whole, 409 with another body', async () => {
    const h = { 'Idempotency-Key': 'batch-1' };
    const a = await post(items(2), testKey, h);
    const n = stored();
    const b = await post(items(2), testKey, h);
    expect(b.status).to.equal(202);
    expect(b.headers.get('idempotent-replayed')).to.equal('true');
    expect(b.body).to.deep.equal(a.body);
    expect(stored()).to.deep.equal(n);
    const c = await post(items(3), testKey, h);
    expect(c.status).to.equal(409);
    expect(c.body.error.code).to.equal('idempotency_key_reused');
  });
});
