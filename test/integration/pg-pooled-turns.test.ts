// PostgreSQL: group-commit turns on the pool (src/store/pg/pooled-turns.ts, docs/async-store.md step 2), against a
// real cluster. A turn's requests advance together on one connection of the pool (their reads in one pipelined
// round trip), several turns are in flight at once with the event loop free, and what one request after another gave
// for free holds: a team's credits never spent twice, one Idempotency-Key one email, within a turn (the turn's memo)
// and between two nodes on one database (the server's locks); a failing request leaves nothing and fails alone; a
// deadlock runs the turn again; afterCommit and whenCommitted come from the pooled COMMIT. The requests are the
// submit path's own plans (services/emails.ts idempotent: getIdem/putIdem; store/credits.ts prepareCharge/charge;
// store/emails.ts insertEmail) around an insert without its `queued` event (services/transition.ts still runs
// through runSync: a synchronous statement inside a pooled plan is refused, as the last test shows).
// A turn in lockstep takes the team's credit lock only with its COMMIT, the charge checked there by the server
// (store/credits.ts chargeAtCommit): the lock is free while the turn waits between round trips, and a balance spent
// meanwhile by another node makes the turn run again request by request.
import { expect } from 'chai';
import type { Ctx } from '../../src/services/context.js';
import { idempotent, submitEmail } from '../../src/services/emails.js';
import type { Principal } from '../../src/services/keys.js';
import { submitMessage } from '../../src/services/submission.js';
import { sql, type DB } from '../../src/store/db.js';
import { afterCommit, groupPlan, whenCommitted } from '../../src/store/group-commit.js';
import { get, run, runSync } from '../../src/store/op.js';
import { poolOf } from '../../src/store/pg/plan-driver.js';
import { usePooledTurns, type PooledTurns } from '../../src/store/pg/pooled-turns.js';
import { chargedAccept } from '../helpers/charged-accept.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { startTestService, tempDir, testEngine, type TestService } from '../helpers/service.js';

describe('PostgreSQL: group-commit turns on the pool, several in flight', function () {
  this.timeout(60_000);
  let a: TestService;
  let b: TestService;
  let turnsA: PooledTurns;
  let turnsB: PooledTurns;

  before(async function () {
    if (testEngine() !== 'pg') return this.skip(); // PostgreSQL only: MTA_TEST_ENGINE=pg
    // Two nodes on one database: two services on one data folder (one database), each its connection and pool.
    const dataDir = tempDir();
    const opts = { dataDir, features: [], overrides: { freeMonthlyCredits: 0 }, env: { MTA_RATE_LIMIT: '0' } };
    a = await startTestService(opts);
    b = await startTestService(opts);
    turnsA = usePooledTurns(a.db, poolOf(a.db)!, 3)!;
    turnsB = usePooledTurns(b.db, poolOf(b.db)!, 3)!;
    a.db.exec('CREATE TABLE turn_t (id BIGINT PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0)');
  });
  after(async () => {
    if (a) usePooledTurns(a.db, null);
    if (b) usePooledTurns(b.db, null);
    await b?.close();
    await a?.close();
  });

  const live = (teamId: string): Principal => ({ keyId: 'k', teamId, mode: 'live', scopes: new Set(['emails:send']) });
  const pool = (s: TestService) => poolOf(s.db)!;

  /** An accept's store work: the credit lock and balance, the email and its delivery, the charge (no event). */
  const accept = (ctx: Ctx, p: Principal, to: string) => chargedAccept(ctx, p.teamId, to, 'pooled');
  /** Submits one accept per address in one event-loop turn of node s; each answer or error code, in order. */
  const together = (s: TestService, p: Principal, tos: string[], key?: (i: number) => string | undefined) =>
    tos.map((to, i) =>
      idempotent(s.ctx, p, key?.(i), { to }, () => accept(s.ctx, p, to)).then(
        (r) => ({ ok: true as const, id: r.body.id, replayed: r.replayed }),
        (err: { code?: string; message?: string }) => ({ ok: false as const, code: err.code, message: err.message }),
      ),
    );
  const teamWith = (credits: number) => {
    const team = a.team().id;
    insertVerifiedDomain(a.db, team, 'acme.test');
    if (credits > 0) a.credits(team, credits);
    return team;
  };
  const left = (team: string) =>
    Number(
      sql<number>(a.db, 'SELECT coalesce(sum(remaining), 0) FROM credit_grants WHERE team_id = ?').pluck().get(team),
    );
  const emailsOf = (team: string) =>
    Number(sql<number>(a.db, 'SELECT count(*) FROM emails WHERE team_id = ?').pluck().get(team));

  it('ten accepts of one turn read together: a few round trips on one connection, not ten', async () => {
    const team = teamWith(100);
    await Promise.all(together(a, live(team), ['warm@x.test'])); // prepared statements, a block of seqs
    const [trips, committed] = [pool(a).roundTrips, turnsA.committed];
    const answers = await Promise.all(
      together(
        a,
        live(team),
        Array.from({ length: 10 }, (_, i) => `r${i}@x.test`),
      ),
    );
    expect(answers.every((x) => x.ok)).to.equal(true);
    expect(turnsA.committed - committed).to.equal(1);
    // The reads of all ten (credit lock and balance, then the charge's), then the COMMIT with every write.
    expect(pool(a).roundTrips - trips).to.be.at.most(4);
    expect(emailsOf(team)).to.equal(11);
    expect(left(team)).to.equal(89);
    // The synchronous connection was not used for them: it holds no transaction.
    expect(a.db.inTransaction).to.equal(false);
  });

  it('keeps the event loop free while turns wait, and has several in flight at once', async () => {
    // Each turn's statement says when the server began it and when its sleep ended: the three were in flight at once
    // when each began before any had ended (one after another, each begins after the previous one ended). The
    // server's times, not the test's wall clock (was: all three within 800 ms, which the parallel phase's load can
    // stretch).
    const sleep = sql<{ began: number; ended: number }>(
      a.db,
      `WITH s AS MATERIALIZED (SELECT pg_sleep(1)) SELECT extract(epoch FROM statement_timestamp()) * 1000 AS began,
      extract(epoch FROM clock_timestamp()) * 1000 AS ended FROM s`,
    );
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const turns: Promise<{ began: number; ended: number } | undefined>[] = [];
    let rows: { began: number; ended: number }[];
    try {
      // Three event-loop turns, three group-commit turns: each waits 1 s on its own connection.
      for (let i = 0; i < 3; i++) {
        turns.push(groupPlan(a.db, () => get(sleep)));
        await new Promise((r) => setImmediate(r));
      }
      rows = (await Promise.all(turns)).map((r) => r!);
    } finally {
      clearInterval(timer);
    }
    expect(
      rows.map((r) => r.ended - r.began).every((ms) => ms >= 999),
      'the sleep between',
    ).to.equal(true);
    expect(Math.max(...rows.map((r) => r.began)), 'each began before any ended').to.be.below(
      Math.min(...rows.map((r) => r.ended)),
    );
    expect(ticks).to.be.above(10);
  });

  it('never charges a team’s credits twice in a turn: of eight accepts for five credits, five are kept', async () => {
    const team = teamWith(5);
    const answers = await Promise.all(
      together(
        a,
        live(team),
        Array.from({ length: 8 }, (_, i) => `c${i}@x.test`),
      ),
    );
    expect(answers.filter((x) => x.ok)).to.have.length(5);
    expect(answers.filter((x) => !x.ok).map((x) => x.code)).to.deep.equal(Array(3).fill('insufficient_credits'));
    expect(left(team)).to.equal(0);
    expect(emailsOf(team)).to.equal(5); // the refused ones left nothing
  });

  /**
   * A request that keeps its turn open on the server for 200 ms (its read travels with the turn's first round trip):
   * two nodes' turns then overlap for sure, whatever the pools' connection times.
   */
  /** Every answer a success naming one email, which exactly one of them made (the others replayed it). */
  function expectOneEmail(answers: ({ ok: true; id: string; replayed: boolean } | { ok: false })[]) {
    expect(
      answers.every((x) => x.ok),
      JSON.stringify(answers),
    ).to.equal(true);
    expect(new Set(answers.map((x) => (x.ok ? x.id : ''))).size).to.equal(1);
    expect(answers.filter((x) => x.ok && !x.replayed)).to.have.length(1);
  }
  const holdTurn = (s: TestService) => groupPlan(s.db, () => get(sql(s.db, 'SELECT pg_sleep(0.2) AS slept')));

  it('two nodes charging one team’s last credits together never go below zero', async () => {
    await Promise.all([
      ...together(a, live(teamWith(1)), ['w@x.test']),
      ...together(b, live(teamWith(1)), ['w@x.test']),
    ]);
    const team = teamWith(6);
    const [committedA, committedB] = [turnsA.committed, turnsB.committed];
    const tos = (n: string) => Array.from({ length: 5 }, (_, i) => `${n}${i}@x.test`);
    const answers = await Promise.all([
      ...together(a, live(team), tos('a')),
      holdTurn(a).then(() => ({ ok: 'held' })),
      ...together(b, live(team), tos('b')),
      holdTurn(b).then(() => ({ ok: 'held' })),
    ]);
    expect(answers.filter((x) => x.ok === true)).to.have.length(6);
    expect(answers.filter((x) => !x.ok).map((x) => (x as { code?: string }).code)).to.deep.equal(
      Array(4).fill('insufficient_credits'),
    );
    expect(left(team)).to.equal(0);
    expect(emailsOf(team)).to.equal(6);
    const ledger = sql<number>(a.db, 'SELECT -sum(amount) FROM credit_ledger WHERE team_id = ?').pluck().get(team);
    expect(Number(ledger)).to.equal(6);
    // Each node's requests went through its own turns on its pool.
    expect(turnsA.committed - committedA).to.be.at.least(1);
    expect(turnsB.committed - committedB).to.be.at.least(1);
  });

  it('charges the free allowance at the COMMIT too: of three accepts with two free credits left, two are kept', async () => {
    const team = teamWith(0);
    const month = new Date(a.ctx.now()).toISOString().slice(0, 7);
    a.db.exec(`INSERT INTO free_usage (team_id, month, used) VALUES ('${team}', '${month}', 3)`);
    const answers = await Promise.all(
      ['f1@x.test', 'f2@x.test', 'f3@x.test'].map((to) =>
        groupPlan(a.db, () => chargedAccept(a.ctx, team, to, 'free', 5)).then(
          () => 'ok',
          (e: { code?: string }) => e.code,
        ),
      ),
    );
    expect(answers.sort()).to.deep.equal(['insufficient_credits', 'ok', 'ok']);
    const used = sql<number>(a.db, 'SELECT used FROM free_usage WHERE team_id = ?').pluck().get(team);
    expect(Number(used)).to.equal(5);
    expect(emailsOf(team)).to.equal(2);
  });

  /** A request that keeps its turn open between two round trips: its second read sleeps 400 ms on the server. */
  const openTurn = (s: TestService) =>
    groupPlan(s.db, function* () {
      yield* get(sql(s.db, 'SELECT 1 AS one'));
      yield* get(sql(s.db, 'SELECT pg_sleep(0.4) AS turn_kept_open'));
    });
  /** Until a session runs openTurn's sleep (seen from node b's synchronous connection). */
  async function untilKeptOpen() {
    const q = sql<number>(
      b.db,
      "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE ?",
    ).pluck();
    for (let i = 0; i < 500 && Number(q.get('%AS turn_kept_open%')) === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
  }

  it('takes the team’s credit lock only with its COMMIT: free while the turn waits between round trips', async () => {
    const team = teamWith(10);
    const kept = openTurn(a);
    const accepted = together(a, live(team), ['late@x.test']);
    await untilKeptOpen();
    // Node b's synchronous connection, autocommit: the lock taken and let go at once if nobody holds it.
    const free = sql<number>(b.db, 'SELECT CASE WHEN pg_try_advisory_xact_lock(1, hashtext(?)) THEN 1 ELSE 0 END')
      .pluck()
      .get(team);
    await kept;
    expect(await Promise.all(accepted)).to.have.nested.property('[0].ok', true);
    expect(Number(free)).to.equal(1);
    expect(left(team)).to.equal(9);
  });

  it('a balance another node spends between a turn’s read and its COMMIT: the server refuses the charge, the turn runs again, the credits exact', async () => {
    const team = teamWith(1);
    const replayed = turnsA.replayed;
    const kept = openTurn(a);
    const mine = together(a, live(team), ['mine@x.test']);
    await untilKeptOpen();
    // Node b's turn reads the same last credit and commits while node a's turn is open (the lock is free).
    const [theirs] = await Promise.all(together(b, live(team), ['theirs@x.test']));
    const [answer] = await Promise.all(mine);
    await kept;
    expect(theirs).to.include({ ok: true });
    expect(answer).to.include({ ok: false, code: 'insufficient_credits' });
    expect(turnsA.replayed - replayed).to.equal(1);
    expect(left(team)).to.equal(0);
    expect(emailsOf(team)).to.equal(1);
    const ledger = sql<number>(a.db, 'SELECT -sum(amount) FROM credit_ledger WHERE team_id = ?').pluck().get(team);
    expect(Number(ledger)).to.equal(1);
  });

  it('one Idempotency-Key in one turn makes one email; the others answer it, replayed', async () => {
    const team = teamWith(10);
    const answers = await Promise.all(
      together(a, live(team), ['same@x.test', 'same@x.test', 'same@x.test'], () => 'k1'),
    );
    expect(answers.every((x) => x.ok)).to.equal(true);
    expect(new Set(answers.map((x) => (x.ok ? x.id : ''))).size).to.equal(1);
    expect(answers.filter((x) => x.ok && x.replayed)).to.have.length(2);
    expect(emailsOf(team)).to.equal(1);
    expect(left(team)).to.equal(9);
  });

  it('two nodes with one Idempotency-Key make one email and give the same answer', async () => {
    const team = teamWith(10);
    for (let round = 0; round < 3; round++) {
      const key = () => `race-${round}`;
      const answers = await Promise.all([
        ...together(a, live(team), ['k@x.test', 'k@x.test'], key),
        ...together(b, live(team), ['k@x.test', 'k@x.test'], key),
        holdTurn(a).then(() => ({ ok: true as const, id: 'held', replayed: true })),
        holdTurn(b).then(() => ({ ok: true as const, id: 'held', replayed: true })),
      ]).then((all) => all.filter((x) => !x.ok || x.id !== 'held'));
      expectOneEmail(answers);
    }
    expect(emailsOf(team)).to.equal(3);
    expect(left(team)).to.equal(7);
  });

  it('two nodes submitting one Message-ID (SMTP submission) make one email', async () => {
    const team = teamWith(10);
    const raw = Buffer.from(
      'From: a@mail.acme.test\r\nTo: m@x.test\r\nSubject: one id\r\nMessage-ID: <race-1@mail.acme.test>\r\n\r\nhello\r\n',
    );
    const send = (s: TestService) =>
      submitMessage(s.ctx, live(team), ['m@x.test'], raw).then(
        (r) => ({ ok: true as const, id: r.id, replayed: r.replayed }),
        (err: { code?: string; message?: string }) => ({ ok: false as const, code: err.code, message: err.message }),
      );
    const [answers] = await Promise.all([Promise.all([send(a), send(a), send(b), send(b)]), holdTurn(a), holdTurn(b)]);
    expectOneEmail(answers);
    expect(emailsOf(team)).to.equal(1);
    expect(left(team)).to.equal(9);
  });

  it('a request that fails after writing leaves nothing and fails alone; a refused write fails only its request', async () => {
    const put = sql(a.db, 'INSERT INTO turn_t (id) VALUES (?)');
    a.db.exec('INSERT INTO turn_t (id) VALUES (2)');
    const replayed = turnsA.replayed;
    const results = await Promise.allSettled([
      groupPlan(a.db, () => run(put, 1)),
      groupPlan(a.db, function* () {
        yield* run(put, 3);
        throw new Error('refused halfway');
      }),
      groupPlan(a.db, () => run(put, 2)), // a duplicate key: refused by the server in the turn's round trip
      groupPlan(a.db, () => run(put, 4)),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).to.equal('refused halfway');
    expect((results[2] as PromiseRejectedResult).reason.code).to.equal('23505');
    expect(turnsA.replayed - replayed).to.equal(1);
    const ids = (sql<number>(a.db, 'SELECT id FROM turn_t ORDER BY id').pluck().all() as number[]).map(Number);
    expect(ids).to.deep.equal([1, 2, 4]);
  });

  it('a turn that deadlocks with another node’s is run again, and both commit', async () => {
    a.db.exec('DELETE FROM turn_t');
    a.db.exec('INSERT INTO turn_t (id) VALUES (10), (11)');
    const bump = (db: DB) => sql(db, 'UPDATE turn_t SET v = v + 1 WHERE id = ?');
    const pause = (db: DB) => sql(db, 'SELECT pg_sleep(0.2) AS slept');
    let runs = 0;
    const crossing = (s: TestService, first: number, second: number) =>
      groupPlan(s.db, function* () {
        runs++;
        yield* run(bump(s.db), first);
        yield* get(pause(s.db));
        yield* run(bump(s.db), second);
      });
    await Promise.all([crossing(a, 10, 11), crossing(b, 11, 10)]);
    expect(runs).to.be.at.least(3); // one was refused (40P01) and ran again
    const vs = sql<number>(a.db, 'SELECT v FROM turn_t ORDER BY id').pluck().all().map(Number);
    expect(vs).to.deep.equal([2, 2]);
  });

  it('afterCommit and whenCommitted come from the pooled COMMIT', async () => {
    const put = sql(a.db, 'INSERT INTO turn_t (id) VALUES (?)');
    const seen = sql<number>(b.db, 'SELECT count(*) FROM turn_t WHERE id = ?').pluck();
    const told: string[] = [];
    const request = (id: number, fail: boolean) =>
      groupPlan(a.db, function* () {
        afterCommit(a.db, (ok) => told.push(`${id} ${ok} seen by another node: ${Number(seen.get(id))}`));
        yield* run(put, id);
        if (fail) throw new Error('no');
      });
    const ok = request(20, false);
    const ko = request(21, true).catch(() => 'refused');
    const committed = new Promise<number>((resolve) => whenCommitted(a.db, () => resolve(Number(seen.get(20)))));
    expect(await ok).to.equal(undefined);
    expect(await ko).to.equal('refused');
    // Told before the promise settles: the refused one at once (false), then the committed one (true), after COMMIT.
    expect(told).to.include('21 false seen by another node: 0');
    expect(told).to.include('20 true seen by another node: 1');
    expect(await committed).to.equal(1);
  });

  it('the submit path itself (submitEmail) on the pool: one turn, nothing on the synchronous connection', async () => {
    const input = (to: string) => ({ from: 'a@mail.acme.test', to: [to], subject: 'pooled', text: 'hello' });
    const submit = (p: Principal, to: string, key?: string) =>
      submitEmail(a.ctx, p, input(to), key).then(
        (r) => r.body.status,
        (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
      );
    const p = live(teamWith(100));
    await submit(p, 'warm@x.test');
    const sync = (a.db as unknown as { client: { roundTrips: number } }).client;
    const [trips, syncTrips, committed] = [pool(a).roundTrips, sync.roundTrips, turnsA.committed];
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => submit(p, `s${i}@x.test`, i === 5 ? 'same' : undefined)),
    );
    expect(answers).to.deep.equal(Array(6).fill('queued'));
    expect(turnsA.committed - committed).to.equal(1);
    expect(sync.roundTrips - syncTrips).to.equal(0);
    // The reads of all six together (the keyed one a step behind: its key's record first), then the COMMIT.
    expect(pool(a).roundTrips - trips).to.be.at.most(5);
    const queued = sql<number>(a.db, "SELECT count(*) FROM events WHERE team_id = ? AND type = 'queued'").pluck();
    expect(Number(queued.get(p.teamId))).to.equal(7);
    // Credits short: the refusal says what is left, read inside the turn (services/credits.ts availableCreditsPlan).
    const poor = live(teamWith(1));
    expect(await Promise.all([submit(poor, 'x@x.test'), submit(poor, 'y@x.test')])).to.deep.equal([
      'queued',
      'insufficient_credits: This email needs 1 credits but only 0 are available.',
    ]);
  });

  it('a synchronous statement inside a pooled plan is refused (it would land outside the turn)', async () => {
    const err = await groupPlan(a.db, function* () {
      yield* get(sql(a.db, 'SELECT 1 AS one'));
      return runSync(get(sql(a.db, 'SELECT 2 AS two')));
    }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/synchronous statement .* inside a plan run on the pool/);
  });
});
