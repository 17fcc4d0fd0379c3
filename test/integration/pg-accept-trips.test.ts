// What one accepted email costs in round trips to PostgreSQL (POST /v1/emails, one at a time, after a first email
// has warmed the caches): the reads an accept needs travel together, and its writes go with the COMMIT. Counted
// from the engine's own counter (deterministic, unlike timings). SQLite has no round trips: skipped there.
import { expect } from 'chai';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';

describe('PostgreSQL: round trips per accepted email', function () {
  this.timeout(60_000);
  let s: TestService;
  let team: string;
  before(async function () {
    if (testEngine() !== 'pg') this.skip();
    s = await startTestService({ features: [] });
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

  it('live key: two (suppressions, sender domain, the credit lock and balance together; the COMMIT)', async () => {
    const key = s.key(team, 'live');
    await trips(key, ['warm@x.test']);
    expect(await trips(key, ['a@x.test'])).to.equal(2);
    // Each recipient's suppression check and both candidate domains (mail.acme.test, acme.test) in one trip.
    expect(await trips(key, ['b@x.test', 'c@y.test', 'd@z.test'])).to.equal(2);
  });
});
