// PostgreSQL: the requests of one group-commit turn advance together (src/store/lockstep.ts): the reads of every
// live accept of the turn travel in one round trip instead of one each; and what one request after another gave
// for free still holds when they all read before any writes: a team's credits are never spent twice, and one
// Idempotency-Key makes one email. Requests are submitted in one event-loop turn through the service, so they
// share a turn; round trips are counted by the engine's own counter. SQLite has no round trips: skipped there.
import { expect } from 'chai';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';
import { submitEmail } from '../../src/services/emails.js';
import type { Principal } from '../../src/services/keys.js';
import { sql } from '../../src/store/db.js';

describe('PostgreSQL: a turn advances its requests together', function () {
  this.timeout(60_000);
  let s: TestService;

  before(async function () {
    if (testEngine() !== 'pg') this.skip();
    s = await startTestService({ features: [], overrides: { freeMonthlyCredits: 0 }, env: { MTA_RATE_LIMIT: '0' } });
  });
  after(() => s?.close());

  const live = (teamId: string): Principal => ({ keyId: 'k', teamId, mode: 'live', scopes: new Set(['emails:send']) });
  const input = (to: string) => ({ from: 'a@mail.acme.test', to: [to], subject: 'lockstep', text: 'hello' });
  const roundTrips = () => (s.db as unknown as { client: { roundTrips: number } }).client.roundTrips;
  /** Submits in one event-loop turn (one group-commit turn); each answer or error, in order. */
  const together = (p: Principal, tos: string[], key?: (i: number) => string | undefined) =>
    Promise.all(
      tos.map((to, i) =>
        submitEmail(s.ctx, p, input(to), key?.(i)).then(
          (r) => ({ ok: true as const, id: r.body.id, replayed: r.replayed }),
          (err: { code?: string }) => ({ ok: false as const, code: err.code }),
        ),
      ),
    );

  it('ten live accepts of one turn read in one round trip, not ten', async () => {
    const team = s.team().id;
    insertVerifiedDomain(s.db, team, 'acme.test');
    s.credits(team, 100);
    await together(live(team), ['warm@x.test']); // the team's first reads and a block of seqs
    const before = roundTrips();
    const answers = await together(
      live(team),
      Array.from({ length: 10 }, (_, i) => `r${i}@x.test`),
    );
    expect(answers.every((a) => a.ok)).to.equal(true);
    // The reads of all ten (suppressions, domain, credit lock and balance) together, then the COMMIT.
    expect(roundTrips() - before).to.be.at.most(3);
  });

  it('never charges a team’s credits twice: of eight requests for five credits, five are accepted', async () => {
    const team = s.team().id;
    insertVerifiedDomain(s.db, team, 'acme.test');
    s.credits(team, 5);
    const answers = await together(
      live(team),
      Array.from({ length: 8 }, (_, i) => `c${i}@x.test`),
    );
    expect(answers.filter((a) => a.ok)).to.have.length(5);
    expect(answers.filter((a) => !a.ok).map((a) => a.code)).to.deep.equal(Array(3).fill('insufficient_credits'));
    const left = sql<number>(s.db, 'SELECT sum(remaining) FROM credit_grants WHERE team_id = ?').pluck().get(team);
    expect(Number(left)).to.equal(0);
  });

  it('one Idempotency-Key in one turn makes one email; the others answer it, replayed', async () => {
    const team = s.team().id;
    insertVerifiedDomain(s.db, team, 'acme.test');
    s.credits(team, 10);
    const answers = await together(live(team), ['same@x.test', 'same@x.test', 'same@x.test'], () => 'key-1');
    expect(answers.every((a) => a.ok)).to.equal(true);
    const ids = new Set(answers.map((a) => (a.ok ? a.id : '')));
    expect(ids.size).to.equal(1);
    expect(answers.filter((a) => a.ok && a.replayed)).to.have.length(2);
    const n = sql<number>(s.db, 'SELECT count(*) FROM emails WHERE team_id = ?').pluck().get(team);
    expect(Number(n)).to.equal(1);
  });
});
