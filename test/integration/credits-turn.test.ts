// A team's balance within one transaction (store/credits.ts keptOf): the second charge of a team in a group-commit
// turn reads no balance but the one the turn's earlier charges left (SQLite since session 23, as PostgreSQL's
// turnState). What must hold whatever is remembered: never a credit spent twice, a grant added in the turn seen by the
// next charge, and a charge rolled back (a savepoint's request that failed) not counted.
import { expect } from 'chai';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';
import { submitEmail } from '../../src/services/emails.js';
import { addCredits } from '../../src/services/credits.js';
import type { Principal } from '../../src/services/keys.js';
import { atomically, sql, tx } from '../../src/store/db.js';
import { charge } from '../../src/store/credits.js';
import { runSync } from '../../src/store/op.js';

describe('credits: one balance per team and transaction', function () {
  this.timeout(60_000);
  let s: TestService;

  before(async () => {
    s = await startTestService({ features: [], overrides: { freeMonthlyCredits: 0 }, env: { MTA_RATE_LIMIT: '0' } });
  });
  after(() => s?.close());

  const live = (teamId: string): Principal => ({ keyId: 'k', teamId, mode: 'live', scopes: new Set(['emails:send']) });
  const input = (to: string) => ({ from: 'a@mail.acme.test', to: [to], subject: 'credits', text: 'hello' });
  /** Each answer, in order (started in one event-loop turn: one group-commit turn). */
  const settle = (ps: Promise<unknown>[]) =>
    Promise.all(
      ps.map((p) =>
        p.then(
          () => 'ok',
          (err: { code?: string }) => err.code ?? String(err),
        ),
      ),
    );
  const accept = (team: string, to: string) => submitEmail(s.ctx, live(team), input(to));
  const left = (team: string) =>
    Number(sql<number>(s.db, 'SELECT sum(remaining) FROM credit_grants WHERE team_id = ?').pluck().get(team));
  const ledger = (team: string) =>
    Number(sql<number>(s.db, 'SELECT coalesce(sum(amount), 0) FROM credit_ledger WHERE team_id = ?').pluck().get(team));
  const newTeam = (credits: number) => {
    const team = s.team().id;
    insertVerifiedDomain(s.db, team, 'acme.test');
    if (credits) s.credits(team, credits);
    return team;
  };

  it('of eight accepts of one turn for five credits, five are kept; grants and ledger exact', async () => {
    const team = newTeam(5);
    const answers = await settle(Array.from({ length: 8 }, (_, i) => accept(team, `c${i}@x.test`)));
    expect(answers.filter((a) => a === 'ok')).to.have.length(5);
    expect(answers.filter((a) => a !== 'ok')).to.deep.equal(Array(3).fill('insufficient_credits'));
    expect(left(team)).to.equal(0);
    expect(ledger(team)).to.equal(-5);
  });

  it('a grant added in the middle of a turn is spent by the turn’s later accepts', async () => {
    const team = newTeam(2);
    const ps = [accept(team, 'a@x.test'), accept(team, 'b@x.test')];
    const added = addCredits(s.ctx, team, 2, null); // SQLite: joins the open turn
    ps.push(accept(team, 'c@x.test'), accept(team, 'd@x.test'), accept(team, 'e@x.test'));
    await added;
    const answers = await settle(ps);
    expect(answers).to.deep.equal(['ok', 'ok', 'ok', 'ok', 'insufficient_credits']);
    expect(left(team)).to.equal(0);
    expect(ledger(team)).to.equal(-4);
  });

  it('a charge rolled back with its savepoint is not counted by the next charge of the transaction', function () {
    // PostgreSQL keeps its turn's balance per transaction (turnState) and runs a turn whose request failed after
    // writing again from the start (store/group-commit.ts), so no charge is rolled back alone inside a turn there.
    if (testEngine() === 'pg') this.skip();
    const team = newTeam(3);
    const at = Date.now();
    const charged = tx(s.db, () => {
      const first = runSync(charge(s.db, team, 1, 1, 0, at));
      try {
        atomically(s.db, () => {
          runSync(charge(s.db, team, 2, 1, 0, at));
          throw new Error('the request failed after its charge');
        });
      } catch {
        /* its savepoint rolled back */
      }
      return [first, runSync(charge(s.db, team, 3, 2, 0, at))];
    });
    expect(charged.map((p) => p?.reduce((n, a) => n + a.amount, 0))).to.deep.equal([1, 2]);
    expect(left(team)).to.equal(0);
    expect(ledger(team)).to.equal(-3);
  });
});
