// API keys are remembered between requests (services/keys.ts); a revoke still takes effect at the next request,
// whether made through this process or by another connection to the store (the CLI's `mta key revoke`).
import { expect } from 'chai';
import { startTestService, tempDir, testEngine, type TestService } from '../helpers/service.js';
import { openDb } from '../../src/store/db.js';

describe('API keys remembered between requests', function () {
  let s: TestService;
  let dir: string;
  before(async function () {
    if (testEngine() === 'pg') this.skip(); // PostgreSQL: another node's revoke is seen within KEY_CACHE_MS
    dir = tempDir();
    s = await startTestService({ dataDir: dir });
  });
  after(() => s?.close());

  it('a key revoked by another connection is refused at the next request', async () => {
    const team = s.team();
    const key = s.key(team.id, 'test', ['emails:read']);
    expect((await s.api('GET', '/v1/emails', { key })).status).to.equal(200);
    expect((await s.api('GET', '/v1/emails', { key })).status).to.equal(200); // from the cache now
    const other = openDb(dir); // as the CLI does
    other.prepare('UPDATE api_keys SET revoked_at = ? WHERE team_id = ?').run(Date.now(), team.id);
    other.close();
    const r = await s.api('GET', '/v1/emails', { key });
    expect(r.status).to.equal(401);
    expect(r.body.error.code).to.equal('invalid_api_key');
  });

  it('a key revoked through the API is refused at once', async () => {
    const team = s.team();
    const admin = s.key(team.id, 'live', ['keys:write', 'emails:read']);
    const key = s.key(team.id, 'live', ['emails:read']);
    expect((await s.api('GET', '/v1/emails', { key })).status).to.equal(200);
    const list = (await s.api('GET', '/v1/api-keys', { key: admin })).body.data as { id: string; prefix: string }[];
    const id = list.find((k) => key.startsWith(k.prefix) && !admin.startsWith(k.prefix))!.id;
    expect((await s.api('DELETE', `/v1/api-keys/${id}`, { key: admin })).status).to.be.within(200, 204);
    expect((await s.api('GET', '/v1/emails', { key })).status).to.equal(401);
  });
});
