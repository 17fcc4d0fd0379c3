// SQLite: a team's enabled webhook endpoints are remembered (services/webhooks.ts enabledEndpoints, session 23), not
// read for every event: forgotten at once after a write through this process, and after another connection's commit
// to the file (the CLI: PRAGMA data_version). PostgreSQL's form (another node's change seen within a second) is in
// pg-accept-trips.test.ts.
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { sql } from '../../src/store/db.js';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';

describe('webhooks: endpoints remembered on SQLite', function () {
  this.timeout(60_000);
  let s: TestService;
  let key: string;
  let team: string;
  let reads = 0;

  before(async function () {
    if (testEngine() === 'pg') this.skip();
    s = await startTestService({ features: [webhooks] });
    team = s.team().id;
    key = s.key(team, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
    // The store's own prepared statement (one per connection and text), its reads counted.
    const stmt = sql(s.db, 'SELECT seq, events, mode FROM webhook_endpoints WHERE team_id = ? AND enabled = 1');
    const all = stmt.all.bind(stmt);
    stmt.all = (...args: unknown[]) => {
      reads++;
      return all(...args);
    };
  });
  after(() => s?.close());

  const send = async (to: string) => {
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@example.test', to: [to], subject: 'cache', text: 'hello' },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    return (r.body as { id: string }).id;
  };
  const rowsFor = (emailId: string) =>
    Number(
      s.db
        .prepare("SELECT count(*) FROM webhook_deliveries WHERE payload LIKE '%' || ? || '%' AND event_type = 'queued'")
        .pluck()
        .get(emailId),
    );

  it('an accept reads them once; the next ones do not, until an endpoint is written through the API', async () => {
    await send('warm@x.test');
    const before = reads;
    await send('a@x.test');
    await send('b@x.test');
    expect(reads - before, 'remembered').to.equal(0);
    const ep = await s.api('POST', '/v1/webhooks', {
      key,
      body: { url: 'http://127.0.0.1:9/hook', events: ['queued'] },
    });
    expect(ep.status).to.equal(201);
    const id = await send('c@x.test');
    expect(rowsFor(id), 'an outbox row for the new endpoint').to.equal(1);
    await s.api('DELETE', `/v1/webhooks/${(ep.body as { id: string }).id}`, { key });
    expect(rowsFor(await send('d@x.test'))).to.equal(0);
  });

  it('an endpoint another connection adds (the CLI) gets the very next accept’s events', async () => {
    await send('warm2@x.test');
    const other = new Database(path.join(s.config.dataDir, 'mta.sqlite'));
    try {
      other
        .prepare(
          `INSERT INTO webhook_endpoints (id, team_id, mode, url, events, secret, enabled, created_at, updated_at)
           VALUES ('wh_cli', ?, 'test', 'http://127.0.0.1:9/cli', 'queued', 'whsec_x', 1, 0, 0)`,
        )
        .run(team);
      expect(rowsFor(await send('e@x.test')), 'seen at once (data_version)').to.equal(1);
      other.prepare("DELETE FROM webhook_endpoints WHERE id = 'wh_cli'").run();
      expect(rowsFor(await send('f@x.test'))).to.equal(0);
    } finally {
      other.close();
    }
  });
});
