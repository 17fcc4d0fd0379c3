// The operator API (/admin/v1): off (404) without MTA_ADMIN_TOKEN; with it, only that bearer token passes
// (never a team key, a missing header or another token); bad filters get the error envelope; sites routes.
// The `mta queue` commands against the same store: JSON output, and hold/purge with no filter exit 2.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { mta } from '../helpers/cli.js';
import { feature as operations } from '../../src/features/operations.js';

const TOKEN = 'admin-token-for-tests-0123456789';

describe('admin API', function () {
  this.timeout(30_000);
  let s: TestService | undefined;
  afterEach(async () => {
    await s?.close();
    s = undefined;
  });

  it('is off (404 for all of /admin) when MTA_ADMIN_TOKEN is unset', async () => {
    s = await startTestService({ features: [operations] });
    for (const p of ['/admin/v1/queue', '/admin/v1/queue/summary', '/admin', '/admin/v1/sites']) {
      const r = await s.api('GET', p, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(r.status, p).to.equal(404);
      expect(r.body.error.code).to.equal('route_not_found');
    }
    expect((await s.api('POST', '/admin/v1/queue/purge', { body: { all: true } })).status).to.equal(404);
  });

  it('refuses team keys, a missing header and another token; answers the admin token', async () => {
    s = await startTestService({ features: [operations], env: { MTA_ADMIN_TOKEN: TOKEN } });
    const team = s.team();
    const key = s.key(team.id, 'live', ['emails:send', 'emails:read', 'keys:write', 'domains:write', 'webhooks:write']);
    const tries: [string, Record<string, string>][] = [
      ['team key', { authorization: `Bearer ${key}` }],
      ['no header', {}],
      ['another token', { authorization: `Bearer ${TOKEN}x` }],
      ['a prefix of it', { authorization: `Bearer ${TOKEN.slice(0, 20)}` }],
      ['not Bearer', { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` }],
    ];
    for (const [what, headers] of tries)
      for (const [method, p] of [
        ['GET', '/admin/v1/queue'],
        ['POST', '/admin/v1/queue/hold?all=true'],
        ['GET', '/admin/v1/sites'],
      ]) {
        const r = await s.api(method, p, { headers });
        expect(r.status, `${what} ${method} ${p}`).to.equal(401);
        expect(r.body.error.code).to.equal('invalid_admin_token');
      }
    const ok = { authorization: `Bearer ${TOKEN}` };
    expect((await s.api('GET', '/admin/v1/queue', { headers: ok })).body).to.deep.equal([]);
    expect((await s.api('GET', '/admin/v1/queue/summary?by=team', { headers: ok })).body).to.deep.equal({
      by: 'team',
      groups: [],
    });
    expect((await s.api('GET', '/admin/v1/sites', { headers: ok })).status).to.equal(200);
    // The token never opens /v1.
    expect((await s.api('GET', '/v1/emails', { headers: ok })).status).to.equal(401);
    const bad: [string, string, string][] = [
      ['GET', '/admin/v1/queue?state=stuck', 'state'],
      ['GET', '/admin/v1/queue?older_than=-1', 'older_than'],
      ['GET', '/admin/v1/queue?colour=red', 'colour'],
      ['GET', '/admin/v1/queue/summary?by=planet', 'by'],
      ['GET', '/admin/v1/queue?limit=0', 'limit'],
    ];
    for (const [method, p, param] of bad) {
      const r = await s.api(method, p, { headers: ok });
      expect(r.status, p).to.equal(422);
      expect(r.body.error.param).to.equal(param);
    }
    expect((await s.api('GET', '/admin/v1/queue?team=nobody', { headers: ok })).body.error.code).to.equal(
      'team_not_found',
    );
    const r = await s.api('POST', '/admin/v1/sites/nowhere.test/suspend', { headers: ok, body: {} });
    expect(r.status).to.equal(404);
    expect(r.body.error.code).to.equal('site_not_found');
    expect((await s.api('POST', '/admin/v1/queue/launch', { headers: ok, body: {} })).status).to.equal(404);
  });

  it('mta queue: JSON output; hold and purge with no filter exit 2 unless --all', async () => {
    s = await startTestService({ features: [operations] });
    const env = { MTA_DATA_DIR: s.config.dataDir };
    const team = s.team('queue-cli');
    const key = s.key(team.id, 'test', ['emails:send']);
    const at = new Date(Date.now() + 3600e3).toISOString();
    const sent = await s.api('POST', '/v1/emails', {
      key,
      body: {
        from: 'a@x.test',
        to: ['a@one.test', 'b@two.test'],
        subject: 's',
        text: 't',
        scheduled_at: at,
        tags: ['t1'],
      },
    });
    expect(sent.status).to.equal(202);
    for (const sub of ['hold', 'purge']) {
      const r = await mta(['queue', sub], env);
      expect(r.code, r.stderr).to.equal(2);
      expect(r.stderr).to.match(/--all/);
    }
    const list = await mta(['queue', 'list', '--team', 'queue-cli', '--tag', 't1'], env);
    expect(list.code, list.stderr).to.equal(0);
    const rows = JSON.parse(list.stdout);
    expect(rows.map((x: any) => [x.recipient, x.state, x.team, x.site])).to.deep.equal([
      ['a@one.test', 'scheduled', 'queue-cli', 'unknown'],
      ['b@two.test', 'scheduled', 'queue-cli', 'unknown'],
    ]);
    expect(Object.keys(rows[0])).to.deep.equal([
      'email_id',
      'recipient',
      'domain',
      'site',
      'team',
      'state',
      'attempts',
      'next_attempt_at',
      'last_reply',
      'held_by',
    ]);
    expect(JSON.parse((await mta(['queue', 'hold', '--domain', 'one.test'], env)).stdout)).to.deep.equal({
      matched: 1,
    });
    const sum = JSON.parse((await mta(['queue', 'summary', '--by', 'state'], env)).stdout);
    expect(sum.groups.map((g: any) => [g.key, g.recipients, g.held])).to.deep.equal([
      ['held', 1, 1],
      ['scheduled', 1, 0],
    ]);
    const p = await mta(['queue', 'purge', '--all', '--reason', 'test'], env);
    expect(JSON.parse(p.stdout)).to.deep.equal({ matched: 2 });
    expect(
      (await s.api('GET', `/v1/emails/${sent.body.id}`, { key: s.key(team.id, 'test', ['emails:read']) })).body.status,
    ).to.equal('failed');
    expect(JSON.parse((await mta(['queue', 'list'], env)).stdout)).to.deep.equal([]);
    const bad = await mta(['queue', 'list', '--state', 'stuck'], env);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.match(/state is one of/);
  });
});
