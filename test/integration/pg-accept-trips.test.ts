// What one accepted email costs in round trips to PostgreSQL (POST /v1/emails, one at a time, after a first email
// has warmed the caches): the reads an accept needs travel together, and its writes go with the COMMIT. Counted
// from the engine's own counter (deterministic, unlike timings). SQLite has no round trips: skipped there.
// The team's webhook endpoints (for the `queued` event's outbox rows) are remembered across turns for a second.
import { expect } from 'chai';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { openDb, type DB } from '../../src/store/db.js';
import { KEY_CACHE_MS } from '../../src/services/keys.js';

describe('PostgreSQL: round trips per accepted email', function () {
  this.timeout(60_000);
  let s: TestService;
  let team: string;
  before(async function () {
    if (testEngine() !== 'pg') this.skip();
    // The synchronous connection's turns (MTA_PG_POOLED_TURNS=off, the way back); the pooled turns' round trips are
    // pg-pooled-turns.test.ts's.
    s = await startTestService({ features: [], env: { MTA_RATE_LIMIT: '0' }, pooledTurns: false });
    team = s.team().id;
    insertVerifiedDomain(s.db, team, 'acme.test');
    s.credits(team, 100);
  });
  after(() => s?.close());

  const trips = async (key: string, to: string[]) => {
    const client = (s.db as unknown as { client: { roundTrips: number } }).client;
    const before = client.roundTrips;
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@mail.acme.test', to, subject: 'trips', text: 'hello' },
    });
    expect(r.status).to.equal(202);
    return client.roundTrips - before;
  };

  it('test key: one (the COMMIT carries every write; the new recipients ids come back with it)', async () => {
    const key = s.key(team, 'test');
    await trips(key, ['warm@x.test']);
    expect(await trips(key, ['a@x.test'])).to.equal(1);
    expect(await trips(key, ['b@x.test', 'c@y.test', 'd@z.test'])).to.equal(1);
  });

  it('no accept waits for a block of email seqs: the next block is read ahead, with a COMMIT', async () => {
    const key = s.key(team, 'test');
    await trips(key, ['warm@x.test']); // the new key read, and a fresh block (the last one has aged out)
    const warmAt = performance.now();
    const counts: number[] = [];
    for (let i = 0; i < 300; i++) counts.push(await trips(key, [`seq${i}@x.test`])); // more than two blocks of 128
    // The key itself is read again once per KEY_CACHE_MS (one more round trip, before the turn): at this box's pace
    // the 300 accepts may outlast it. A block waited for would cost one more every 128 accepts (~1 s here).
    const keyReads = Math.floor((performance.now() - warmAt) / KEY_CACHE_MS);
    const extra = counts.filter((n) => n !== 1);
    expect(
      extra.every((n) => n === 2) && extra.length <= keyReads,
      `${extra.length} extra, ${keyReads} key reads`,
    ).to.equal(true);
  });

  it('live key: two (suppressions, sender domain, the credit lock and balance together; the COMMIT)', async () => {
    const key = s.key(team, 'live');
    await trips(key, ['warm@x.test']);
    expect(await trips(key, ['a@x.test'])).to.equal(2);
    // Each recipient's suppression check and both candidate domains (mail.acme.test, acme.test) in one trip.
    expect(await trips(key, ['b@x.test', 'c@y.test', 'd@z.test'])).to.equal(2);
  });
});

describe('PostgreSQL: a team’s webhook endpoints are remembered across turns', function () {
  this.timeout(60_000);
  let s: TestService;
  let other: DB;
  let team: string;
  let key: string;
  before(async function () {
    if (testEngine() !== 'pg') this.skip();
    s = await startTestService({ features: [webhooks], pooledTurns: false }); // the synchronous turns' reads
    other = openDb('', { databaseUrl: s.config.databaseUrl! }); // another node's connection
    team = s.team().id;
    key = s.key(team, 'test');
  });
  after(() => {
    other?.close();
    return s?.close();
  });

  /** The accept's id, and how many times the team's endpoints were read meanwhile (statements sent, spied on). */
  const send = async (to: string) => {
    type Batch = { text: string }[];
    const client = (s.db as unknown as { client: { exchange: (b: Batch) => unknown } }).client;
    const exchange = client.exchange;
    let reads = 0;
    client.exchange = function (batch: Batch) {
      reads += batch.filter((q) => q.text.startsWith('SELECT seq, events, mode FROM webhook_endpoints')).length;
      return exchange.call(this, batch);
    };
    try {
      const r = await s.api('POST', '/v1/emails', { key, body: { from: 'a@x.test', to, subject: 's', text: 't' } });
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      return { id: (r.body as { id: string }).id, reads };
    } finally {
      client.exchange = exchange;
    }
  };
  const rowsFor = (emailId: string) =>
    s.db
      .prepare(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE payload LIKE '%' || ? || '%' AND event_type = 'queued'",
      )
      .get(emailId) as { n: number };

  it('an accept reads them once, not in every turn; one made or removed by another node is seen within a second', async () => {
    await send('warm@x.test');
    // The team's (empty) list is remembered: the next accept does not read it.
    expect((await send('a@x.test')).reads).to.equal(0);
    // Another node adds a test endpoint: seen once what this node remembered has expired (PG_ENDPOINTS_TTL_MS).
    other
      .prepare(
        `INSERT INTO webhook_endpoints (id, team_id, mode, url, events, secret, enabled, created_at, updated_at)
         VALUES ('wh_other', $1, 'test', 'http://127.0.0.1:9/hook', 'queued', 'whsec_x', 1, 0, 0)`,
      )
      .run(team);
    await new Promise((r) => setTimeout(r, 1100));
    const seen = await send('b@x.test');
    expect(seen.reads, 'read again').to.equal(1);
    expect(rowsFor(seen.id).n, 'an outbox row for the new endpoint').to.equal(1);
    // It is deleted there: this node still remembers it for a moment, yet the accept succeeds and writes no row for it.
    other.prepare("DELETE FROM webhook_endpoints WHERE id = 'wh_other'").run();
    const after = await send('c@x.test');
    expect(rowsFor(after.id).n).to.equal(0);
    expect(after.reads, 'still remembered: no read').to.equal(0);
  });
});
