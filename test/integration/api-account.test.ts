// Auth, scopes, keys, idempotency, credits, suppressions, pagination, rate limits and cancel,
// through the real HTTP server with a real SQLite file. Delivery features are off.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain, count } from '../helpers/factories.js';

const mail = (over: Record<string, unknown> = {}) => ({
  from: 'a@acme.test',
  to: 'user@example.org',
  subject: 's',
  text: 't',
  ...over,
});

describe('API: auth, keys, idempotency, credits, suppressions, lists', () => {
  let s: TestService;
  before(async () => {
    s = await startTestService({ features: [], env: { MTA_RATE_LIMIT: '0' } });
  });
  after(() => s.close());

  function liveTeam(credits = 0) {
    const t = s.team();
    insertVerifiedDomain(s.db, t.id, 'acme.test');
    if (credits) s.credits(t.id, credits);
    return { id: t.id, live: s.key(t.id, 'live'), test: s.key(t.id, 'test') };
  }

  describe('authentication and scopes', () => {
    it('missing, malformed, unknown and revoked keys are 401', async () => {
      const t = s.team();
      const key = s.key(t.id);
      expect((await s.api('GET', '/v1/emails')).body.error).to.include({
        type: 'authentication_error',
        code: 'missing_api_key',
      });
      expect((await s.api('GET', '/v1/emails', { headers: { authorization: 'Basic abc' } })).body.error.code).to.equal(
        'missing_api_key',
      );
      const unknown = await s.api('GET', '/v1/emails', { key: 'ps_test_nope' });
      expect(unknown.status).to.equal(401);
      expect(unknown.body.error.code).to.equal('invalid_api_key');
      expect((await s.api('GET', '/v1/emails', { key })).status).to.equal(200);
      const admin = s.key(t.id, 'test', ['keys:write']);
      const id = (await s.api('GET', '/v1/api-keys', { key: admin })).body.data.find((k: any) =>
        key.startsWith(k.prefix),
      ).id;
      expect((await s.api('DELETE', `/v1/api-keys/${id}`, { key: admin })).body.revoked_at).to.be.a('string');
      expect((await s.api('GET', '/v1/emails', { key })).body.error.code).to.equal('invalid_api_key');
    });

    it('a key outside its scopes gets 403 missing_scope; default scopes exclude domains:write, webhooks:write, keys:write', async () => {
      const t = s.team();
      const readOnly = s.key(t.id, 'test', ['emails:read']);
      const r = await s.api('POST', '/v1/emails', { key: readOnly, body: mail() });
      expect(r.status).to.equal(403);
      expect(r.body.error).to.include({ type: 'permission_error', code: 'missing_scope' });
      const dflt = s.key(t.id);
      expect((await s.api('GET', '/v1/api-keys', { key: dflt })).status).to.equal(403);
      expect(count(s.db, 'emails', `team_id = '${t.id}'`)).to.equal(0);
    });

    it('POST /api-keys shows the full key once, stores only its hash, and caps active keys at 20', async () => {
      const t = s.team();
      const admin = s.key(t.id, 'live', ['keys:write', 'emails:send', 'emails:read', 'domains:read']);
      const c = await s.api('POST', '/v1/api-keys', {
        key: admin,
        body: { name: 'ci', mode: 'live', scopes: ['emails:send'] },
      });
      expect(c.status).to.equal(201);
      expect(c.body).to.include({ object: 'api_key', name: 'ci', mode: 'live', revoked_at: null });
      expect(c.body.key).to.match(/^ps_live_/);
      expect(c.body.prefix).to.equal(c.body.key.slice(0, 12));
      expect(count(s.db, 'api_keys', `hash = '${c.body.key}'`)).to.equal(0);
      const row = s.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(c.body.id) as Record<string, string>;
      expect(JSON.stringify(row)).not.to.contain(c.body.key);
      const list = await s.api('GET', '/v1/api-keys', { key: admin });
      expect(JSON.stringify(list.body)).not.to.contain(c.body.key);
      for (let i = 2; i < 20; i++)
        expect((await s.api('POST', '/v1/api-keys', { key: admin, body: {} })).status).to.equal(201);
      const over = await s.api('POST', '/v1/api-keys', { key: admin, body: {} });
      expect(over.status).to.equal(422);
      expect(over.body.error.code).to.equal('key_limit_reached');
      expect(
        (await s.api('POST', '/v1/api-keys', { key: admin, body: { scopes: ['everything'] } })).body.error.param,
      ).to.equal('scopes');
    });

    it('a key cannot escalate: test keys make only test keys, and only with scopes the creator holds', async () => {
      const t = s.team();
      const testAdmin = s.key(t.id, 'test', ['keys:write', 'emails:read']);
      const live = await s.api('POST', '/v1/api-keys', {
        key: testAdmin,
        body: { mode: 'live', scopes: ['emails:read'] },
      });
      expect(live.status).to.equal(403);
      expect(live.body.error).to.include({ type: 'permission_error', code: 'missing_scope', param: 'mode' });
      const wider = await s.api('POST', '/v1/api-keys', {
        key: testAdmin,
        body: { scopes: ['emails:read', 'domains:write'] },
      });
      expect(wider.status).to.equal(403);
      expect(wider.body.error.param).to.equal('scopes');
      expect(wider.body.error.message).to.contain('domains:write');
      expect(
        (await s.api('POST', '/v1/api-keys', { key: testAdmin, body: { scopes: ['emails:read'] } })).status,
      ).to.equal(201);
      const liveAdmin = s.key(t.id, 'live', ['keys:write', 'emails:send', 'emails:read', 'domains:read']);
      expect((await s.api('POST', '/v1/api-keys', { key: liveAdmin, body: { mode: 'live' } })).status).to.equal(201);
      expect(count(s.db, 'api_keys', `team_id = '${t.id}'`)).to.equal(4);
    });
  });

  describe('idempotency', () => {
    it('same key and body replays the original response; another body is 409; keys are per team', async () => {
      const a = liveTeam(10);
      const h = { 'idempotency-key': 'order-1' };
      const r1 = await s.api('POST', '/v1/emails', { key: a.live, body: mail(), headers: h });
      const r2 = await s.api('POST', '/v1/emails', { key: a.live, body: mail(), headers: h });
      expect(r1.status).to.equal(202);
      expect(r2.status).to.equal(202);
      expect(r2.body).to.deep.equal(r1.body);
      expect(count(s.db, 'emails', `team_id = '${a.id}'`)).to.equal(1);
      expect((await s.api('GET', '/v1/credits', { key: a.live })).body.free_remaining).to.equal(2999);
      const r3 = await s.api('POST', '/v1/emails', { key: a.live, body: mail({ subject: 'other' }), headers: h });
      expect(r3.status).to.equal(409);
      expect(r3.body.error).to.include({ type: 'idempotency_error', code: 'idempotency_key_reused' });
      const b = liveTeam(10);
      const rb = await s.api('POST', '/v1/emails', { key: b.live, body: mail(), headers: h });
      expect(rb.status).to.equal(202);
      expect(rb.body.id).not.to.equal(r1.body.id);
      const long = await s.api('POST', '/v1/emails', {
        key: a.live,
        body: mail(),
        headers: { 'idempotency-key': 'k'.repeat(256) },
      });
      expect(long.status).to.equal(422);
    });

    it('concurrent requests with one key create one email', async () => {
      const a = liveTeam();
      const rs = await Promise.all(
        Array.from({ length: 20 }, () =>
          s.api('POST', '/v1/emails', { key: a.test, body: mail(), headers: { 'idempotency-key': 'same' } }),
        ),
      );
      expect(new Set(rs.map((r) => r.body.id)).size).to.equal(1);
      expect(rs.every((r) => r.status === 202)).to.equal(true);
      expect(count(s.db, 'emails', `team_id = '${a.id}'`)).to.equal(1);
    });

    it('expires after 24 hours', async () => {
      const a = liveTeam();
      const r1 = await s.api('POST', '/v1/emails', {
        key: a.test,
        body: mail(),
        headers: { 'idempotency-key': 'old' },
      });
      // A test key's records are kept under `<team id>:test` (store/idempotency.ts).
      s.db.prepare('UPDATE idempotency SET created_at = created_at - 86400001 WHERE team_id = ?').run(`${a.id}:test`);
      const r2 = await s.api('POST', '/v1/emails', {
        key: a.test,
        body: mail(),
        headers: { 'idempotency-key': 'old' },
      });
      expect(r2.body.id).not.to.equal(r1.body.id);
    });
  });

  describe('credits', () => {
    it('test mode never charges; live charges one per unique recipient, free allowance first, then grants oldest first', async () => {
      const a = liveTeam();
      const t = await s.api('POST', '/v1/emails', {
        key: a.test,
        body: mail({ to: ['x@example.org', 'y@example.org'] }),
      });
      expect(t.body.credits_charged).to.equal(0);
      s.db
        .prepare('INSERT INTO free_usage (team_id, month, used) VALUES (?, ?, 2999)')
        .run(a.id, new Date().toISOString().slice(0, 7));
      s.credits(a.id, 2);
      s.credits(a.id, 5);
      const r = await s.api('POST', '/v1/emails', {
        key: a.live,
        body: mail({ to: ['x@example.org', 'X@EXAMPLE.ORG'], cc: ['y@example.org'], bcc: ['z@example.org'] }),
      });
      expect(r.status).to.equal(202);
      expect(r.body.credits_charged).to.equal(3);
      const bal = (await s.api('GET', '/v1/credits', { key: a.test })).body;
      // 1 free + 2 from the older grant; the newer grant of 5 is untouched.
      expect(bal).to.include({ object: 'credit_balance', available: 5, free_remaining: 0, purchased_remaining: 5 });
      expect(bal.grants.map((g: any) => [g.amount, g.remaining])).to.deep.equal([[5, 5]]);
    });

    it('402 insufficient_credits states needed and available, and stores nothing', async () => {
      const a = liveTeam();
      s.db
        .prepare('INSERT INTO free_usage (team_id, month, used) VALUES (?, ?, 2999)')
        .run(a.id, new Date().toISOString().slice(0, 7));
      const r = await s.api('POST', '/v1/emails', {
        key: a.live,
        body: mail({ to: ['a@example.org', 'b@example.org'] }),
      });
      expect(r.status).to.equal(402);
      expect(r.body.error).to.include({ type: 'insufficient_credits', code: 'insufficient_credits' });
      expect(r.body.error.message).to.match(/2\b.*\b1\b/);
      expect(count(s.db, 'emails', `team_id = '${a.id}'`)).to.equal(0);
      expect((await s.api('GET', '/v1/credits', { key: a.live })).body.available).to.equal(1);
    });

    it('cancel refunds to the grant the credits came from', async () => {
      const a = liveTeam();
      s.db
        .prepare('INSERT INTO free_usage (team_id, month, used) VALUES (?, ?, 3000)')
        .run(a.id, new Date().toISOString().slice(0, 7));
      s.credits(a.id, 3);
      const at = new Date(Date.now() + 3600e3).toISOString();
      const r = await s.api('POST', '/v1/emails', {
        key: a.live,
        body: mail({ to: ['a@example.org', 'b@example.org'], scheduled_at: at }),
      });
      expect(r.body.credits_charged).to.equal(2);
      expect((await s.api('GET', '/v1/credits', { key: a.live })).body.purchased_remaining).to.equal(1);
      const c = await s.api('POST', `/v1/emails/${r.body.id}/cancel`, { key: a.live });
      expect(c.status).to.equal(200);
      expect(c.body).to.include({ status: 'canceled', credits_charged: 0 });
      expect((await s.api('GET', '/v1/credits', { key: a.live })).body.grants[0].remaining).to.equal(3);
      const again = await s.api('POST', `/v1/emails/${r.body.id}/cancel`, { key: a.live });
      expect(again.status).to.equal(422);
      expect(again.body.error.code).to.equal('email_not_cancelable');
      const ev = await s.api('GET', `/v1/emails/${r.body.id}/events`, { key: a.live });
      expect(ev.body.data.map((e: any) => e.type)).to.deep.equal(['queued', 'canceled', 'canceled']);
    });
  });

  describe('suppressions', () => {
    it('drops suppressed live recipients uncharged, 422 when all are suppressed, test mode unaffected', async () => {
      const a = liveTeam(10);
      const add = await s.api('POST', '/v1/suppressions', { key: a.live, body: { address: 'Gone@Example.org' } });
      expect(add.status).to.equal(201);
      expect(add.body).to.include({
        object: 'suppression',
        address: 'gone@example.org',
        reason: 'manual',
        email_id: null,
      });
      const r = await s.api('POST', '/v1/emails', {
        key: a.live,
        body: mail({ to: ['gone@example.org', 'here@example.org'] }),
      });
      expect(r.status).to.equal(202);
      expect(r.body.credits_charged).to.equal(1);
      const all = await s.api('POST', '/v1/emails', { key: a.live, body: mail({ to: ['GONE@example.org'] }) });
      expect(all.status).to.equal(422);
      expect(all.body.error).to.include({ code: 'all_recipients_suppressed', param: 'to' });
      expect(
        (await s.api('POST', '/v1/emails', { key: a.test, body: mail({ to: ['gone@example.org'] }) })).status,
      ).to.equal(202);
      const list = await s.api('GET', '/v1/suppressions', { key: a.live });
      expect(list.body.data.map((x: any) => x.address)).to.deep.equal(['gone@example.org']);
      expect((await s.api('DELETE', '/v1/suppressions/gone@example.org', { key: a.live })).status).to.equal(204);
      expect((await s.api('DELETE', '/v1/suppressions/gone@example.org', { key: a.live })).body.error.code).to.equal(
        'suppression_not_found',
      );
      expect(
        (await s.api('POST', '/v1/emails', { key: a.live, body: mail({ to: ['gone@example.org'] }) })).status,
      ).to.equal(202);
      expect(
        (await s.api('POST', '/v1/suppressions', { key: a.live, body: { address: 'bad' } })).body.error.param,
      ).to.equal('address');
    });
  });

  describe('lists', () => {
    it('pages newest first with stable cursors while new emails arrive; filters by status, test_mode and tag', async () => {
      const a = liveTeam(100);
      const ids: string[] = [];
      for (let i = 0; i < 7; i++)
        ids.push(
          (
            await s.api('POST', '/v1/emails', {
              key: i % 2 ? a.live : a.test,
              body: mail({ tags: i % 3 === 0 ? ['x'] : ['y'] }),
            })
          ).body.id,
        );
      const p1 = (await s.api('GET', '/v1/emails?limit=3', { key: a.live })).body;
      expect(p1.data.map((e: any) => e.id)).to.deep.equal(ids.slice(4).reverse());
      expect(p1.has_more).to.equal(true);
      await s.api('POST', '/v1/emails', { key: a.test, body: mail() });
      const p2 = (await s.api('GET', `/v1/emails?limit=3&cursor=${p1.next_cursor}`, { key: a.live })).body;
      expect(p2.data.map((e: any) => e.id)).to.deep.equal(ids.slice(1, 4).reverse());
      const p3 = (await s.api('GET', `/v1/emails?limit=3&cursor=${p2.next_cursor}`, { key: a.live })).body;
      expect(p3.data.map((e: any) => e.id)).to.deep.equal([ids[0]]);
      expect(p3).to.include({ has_more: false, next_cursor: null });
      const live = (await s.api('GET', '/v1/emails?test_mode=false', { key: a.live })).body.data;
      expect(live.map((e: any) => e.id)).to.deep.equal([ids[5], ids[3], ids[1]]);
      const tagged = (await s.api('GET', '/v1/emails?tag=x&limit=2', { key: a.live })).body;
      expect(tagged.data.map((e: any) => e.id)).to.deep.equal([ids[6], ids[3]]);
      expect(
        (await s.api('GET', `/v1/emails?tag=x&cursor=${tagged.next_cursor}`, { key: a.live })).body.data.map(
          (e: any) => e.id,
        ),
      ).to.deep.equal([ids[0]]);
      expect((await s.api('GET', '/v1/emails?status=delivered', { key: a.live })).body.data).to.deep.equal([]);
      expect((await s.api('GET', '/v1/emails', { key: a.live })).body.data).to.have.length(8);
      // A tag with a status follows the email's status changes (migration 032's trigger), in each mode.
      expect((await s.api('POST', `/v1/emails/${ids[3]}/cancel`, { key: a.live })).status).to.equal(200);
      const tagStatus = async (q: string) =>
        (await s.api('GET', `/v1/emails?tag=x&${q}`, { key: a.live })).body.data.map((e: any) => e.id);
      const waiting = (await s.api('GET', `/v1/emails/${ids[6]}`, { key: a.live })).body.status;
      expect(await tagStatus('status=canceled')).to.deep.equal([ids[3]]);
      expect(await tagStatus('status=canceled&test_mode=true')).to.deep.equal([]);
      expect(await tagStatus(`status=${waiting}`)).to.deep.equal([ids[6], ids[0]]);
      expect(await tagStatus(`status=${waiting}&test_mode=false`)).to.deep.equal([]);
      expect(await tagStatus('test_mode=false')).to.deep.equal([ids[3]]);
    });

    it('refuses limits outside 1..100, tampered cursors and unknown statuses', async () => {
      const a = liveTeam();
      for (const l of ['0', '101', 'abc', '-1', '1.5']) {
        const r = await s.api('GET', `/v1/emails?limit=${l}`, { key: a.test });
        expect(r.status, l).to.equal(422);
        expect(r.body.error.param).to.equal('limit');
      }
      const tampered = Buffer.from('em.1.aaaaaaaaaaaaaaaa').toString('base64url');
      for (const c of ['garbage', tampered]) {
        const r = await s.api('GET', `/v1/emails?cursor=${c}`, { key: a.test });
        expect(r.status).to.equal(422);
        expect(r.body.error.param).to.equal('cursor');
      }
      expect((await s.api('GET', '/v1/emails?status=lost', { key: a.test })).body.error.param).to.equal('status');
    });

    it("a team never sees another team's emails", async () => {
      const a = liveTeam();
      const b = liveTeam();
      const e = (await s.api('POST', '/v1/emails', { key: a.test, body: mail() })).body;
      expect((await s.api('GET', `/v1/emails/${e.id}`, { key: b.test })).status).to.equal(404);
      expect((await s.api('GET', `/v1/emails/${e.id}/events`, { key: b.test })).status).to.equal(404);
      expect((await s.api('POST', `/v1/emails/${e.id}/cancel`, { key: b.test })).status).to.equal(404);
      expect((await s.api('GET', '/v1/emails', { key: b.test })).body.data).to.deep.equal([]);
    });
  });
});

describe('API: rate limits', () => {
  let s: TestService;
  before(async () => {
    s = await startTestService({ features: [], env: { MTA_RATE_LIMIT: '1', MTA_RATE_BURST: '3' } });
  });
  after(() => s.close());

  it('sends RateLimit-* headers and 429 rate_limited with Retry-After past the burst, per key', async () => {
    const t = s.team();
    const k1 = s.key(t.id);
    const k2 = s.key(t.id);
    const rs = [];
    for (let i = 0; i < 4; i++) rs.push(await s.api('GET', '/v1/emails', { key: k1 }));
    expect(rs.slice(0, 3).map((r) => r.status)).to.deep.equal([200, 200, 200]);
    expect(rs[0].headers.get('ratelimit-limit')).to.equal('3');
    expect(rs[0].headers.get('ratelimit-remaining')).to.equal('2');
    expect(rs[0].headers.get('ratelimit-reset')).to.match(/^\d+$/);
    expect(rs[3].status).to.equal(429);
    expect(rs[3].body.error).to.include({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(Number(rs[3].headers.get('retry-after'))).to.be.at.least(1);
    expect((await s.api('GET', '/v1/emails', { key: k2 })).status).to.equal(200);
  });

  it('counts requests without a valid key (and unknown routes) against the client address, with the same headers', async () => {
    const rs = [];
    for (let i = 0; i < 4; i++)
      rs.push(await s.api('GET', i % 2 ? '/v1/nope' : '/v1/emails', { key: i % 2 ? undefined : 'ps_test_guess' }));
    expect(rs.slice(0, 3).map((r) => r.status)).to.deep.equal([401, 404, 401]);
    for (const r of rs) expect(r.headers.get('ratelimit-limit')).to.equal('3');
    expect(rs[0].headers.get('ratelimit-remaining')).to.equal('2');
    expect(rs[3].status).to.be.oneOf([404, 429]);
    const guess = await s.api('GET', '/v1/emails', { key: 'ps_test_guess2' });
    expect(guess.status).to.equal(429);
    expect(guess.body.error.code).to.equal('rate_limited');
    expect(Number(guess.headers.get('retry-after'))).to.be.at.least(1);
  });
});
