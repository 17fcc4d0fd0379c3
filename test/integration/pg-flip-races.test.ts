// PostgreSQL, the flip (issue 38 item 4, docs/async-store.md step 2 "Session 20"): with MTA_PG_POOLED_TURNS on (the
// default) every holder of the team's credit lock and of the Idempotency-Key's lock runs on the pool, so two nodes on
// one database race through the server's locks and primary keys only, and no node's event loop ever waits for a lock
// one of its own pooled transactions holds. Two races the issue asks for, each on two nodes (two services on one
// database): one Message-ID submitted over SMTP on both at once makes one email; a result batch refunding a team
// while a pooled turn on the same node holds that team's credit lock (and the other node charges it too) neither
// hangs nor loses a credit.
import { expect } from 'chai';
import nodemailer from 'nodemailer';
import { feature as submission } from '../../src/features/submission.js';
import { ResultSink } from '../../src/outbound/results.js';
import type { Ctx } from '../../src/services/context.js';
import { sql } from '../../src/store/db.js';
import { groupPlan } from '../../src/store/group-commit.js';
import { get, type Gen } from '../../src/store/op.js';
import { locksOnPool } from '../../src/store/pg/plan-driver.js';
import { chargedAccept } from '../helpers/charged-accept.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { startTestService, tempDir, testEngine, type TestService } from '../helpers/service.js';
import { submissionPort } from './submission-env.js';

describe('PostgreSQL, the flip: two nodes race through the server’s locks, none waits on its own', function () {
  // Bounds the hang these tests look for (a node's event loop stopped by its own synchronous wait for a lock one of
  // its pooled transactions holds lasts the synchronous connection's 60 s limit).
  this.timeout(30_000);
  let a: TestService;
  let b: TestService;

  before(async function () {
    if (testEngine() !== 'pg') return this.skip(); // PostgreSQL only: MTA_TEST_ENGINE=pg
    // Two nodes on one database: two services on one data folder, each its connection, pool and SMTP listener.
    const dataDir = tempDir();
    const opts = {
      dataDir,
      features: [submission],
      overrides: { freeMonthlyCredits: 0 },
      env: { MTA_RATE_LIMIT: '0' },
    };
    a = await startTestService(opts);
    b = await startTestService(opts);
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  const teamWith = (credits: number) => {
    const team = a.team().id;
    insertVerifiedDomain(a.db, team, 'acme.test');
    a.credits(team, credits);
    return team;
  };
  const left = (team: string) =>
    Number(
      sql<number>(a.db, 'SELECT coalesce(sum(remaining), 0) FROM credit_grants WHERE team_id = ?').pluck().get(team),
    );
  const spent = (team: string) =>
    Number(
      sql<number>(a.db, 'SELECT -coalesce(sum(amount), 0) FROM credit_ledger WHERE team_id = ?').pluck().get(team),
    );
  const emailsOf = (team: string) =>
    Number(sql<number>(a.db, 'SELECT count(*) FROM emails WHERE team_id = ?').pluck().get(team));

  it('runs the credit lock’s holders on the pool by default (MTA_PG_POOLED_TURNS unset)', () => {
    expect(locksOnPool(a.db)).to.equal(true);
    expect(locksOnPool(b.db)).to.equal(true);
  });

  it('one Message-ID submitted over SMTP on two nodes at once makes one email, charged once', async () => {
    const team = teamWith(20);
    const key = a.key(team, 'live', ['emails:send']);
    const transport = (s: TestService) =>
      nodemailer.createTransport({
        host: '127.0.0.1',
        port: submissionPort({ s }),
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
        auth: { user: 'apikey', pass: key },
      });
    const clients = [transport(a), transport(a), transport(b), transport(b)];
    try {
      for (let round = 0; round < 3; round++) {
        const mail = {
          from: 'app@acme.test',
          to: 'm@x.test',
          subject: `one id ${round}`,
          text: 'hello',
          messageId: `<race-${round}@acme.test>`,
        };
        // Connected and authenticated first, so the four DATA commands reach both nodes together.
        await Promise.all(clients.map((c) => c.verify()));
        const replies = await Promise.all(clients.map((c) => c.sendMail(mail).then((i) => i.response)));
        const ids = replies.map((r) => / (em_[A-Za-z0-9]+)/.exec(r)?.[1]);
        expect(
          ids.every((id) => id !== undefined),
          JSON.stringify(replies),
        ).to.equal(true);
        expect(new Set(ids).size, JSON.stringify(replies)).to.equal(1);
      }
    } finally {
      for (const c of clients) c.close();
    }
    expect(emailsOf(team)).to.equal(3);
    expect(left(team)).to.equal(17);
    expect(spent(team)).to.equal(3);
  });

  /** An accept's store work (credit lock and balance, the email and its recipient, the charge), then `holdS` on the server. */
  function* acceptAndHold(ctx: Ctx, teamId: string, to: string, holdS = 0): Gen<number> {
    const { seq } = yield* chargedAccept(ctx, teamId, to, 'race');
    // The turn keeps the team's credit lock while the server sleeps, then needs this node's event loop to COMMIT. A
    // turn in lockstep takes the lock only with its COMMIT (store/credits.ts chargeAtCommit); one run again request
    // by request takes it with its first read and holds it across round trips, as this one does.
    if (holdS) {
      yield* get(sql(ctx.db, 'SELECT pg_advisory_xact_lock(1, hashtext(?)) AS locked'), teamId);
      yield* get(sql(ctx.db, `SELECT pg_sleep(${holdS}) AS slept`));
    }
    return seq;
  }
  const accept = (s: TestService, teamId: string, to: string, holdS = 0) =>
    groupPlan(s.db, () => acceptAndHold(s.ctx, teamId, to, holdS)).then(
      () => 'ok',
      (e: { code?: string }) => e.code ?? String(e),
    );
  /** Whether a transaction holds a team's credit lock now (pg_advisory_xact_lock(1, …)), seen from node b. */
  const creditLockHeld = () =>
    Number(
      sql<number>(b.db, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 1 AND granted")
        .pluck()
        .get(),
    ) > 0;

  it('a result batch refunding a team while a pooled turn of its node holds the credit lock, and another node charges: no hang, the ledger exact', async () => {
    const team = teamWith(30);
    // Ten accepted emails whose recipients the batch will fail (each refunds its credit).
    const seqs: number[] = [];
    for (let i = 0; i < 10; i++) seqs.push(await groupPlan(a.db, () => acceptAndHold(a.ctx, team, `f${i}@x.test`)));
    expect(left(team)).to.equal(20);
    const rcptOf = (seq: number) =>
      Number(sql<number>(a.db, 'SELECT id FROM deliveries WHERE email_seq = ?').pluck().get(seq));
    const flushed: number[] = [];
    const sink = new ResultSink(a.ctx, (ids) => flushed.push(...ids), { delayMs: 60_000, max: 1000 });
    for (const seq of seqs) {
      const id = rcptOf(seq);
      sink.push(seq, [{ deliveryId: id, event: 'failed', data: { attempt: 1, reason: 'gave up' } }], [id]);
    }
    for (let round = 0; round < 3; round++) {
      // A turn on node a takes the team's credit lock and keeps it 300 ms on the server.
      const held = accept(a, team, `h${round}@x.test`, 0.3);
      while (!creditLockHeld()) await new Promise((r) => setTimeout(r, 2));
      // Node a's result batch (refunds: the same lock) goes meanwhile, and both nodes charge the team too.
      if (round === 0) sink.flush();
      const others = [0, 1, 2].flatMap((i) => [
        accept(a, team, `a${round}${i}@x.test`),
        accept(b, team, `b${round}${i}@x.test`),
      ]);
      expect(await Promise.all([held, ...others])).to.deep.equal(Array(7).fill('ok'));
    }
    await sink.settled();
    expect(flushed).to.have.length(10);
    const failed = sql<number>(
      a.db,
      "SELECT count(*) FROM deliveries d JOIN emails e ON e.seq = d.email_seq WHERE e.team_id = ? AND d.status = 'failed'",
    );
    expect(Number(failed.pluck().get(team))).to.equal(10);
    const charged = sql<number>(a.db, 'SELECT sum(credits_charged) FROM emails WHERE team_id = ?').pluck();
    // 10 + 21 accepted, 10 refunded: 21 credits spent, by the ledger, the grants and the emails alike.
    expect(emailsOf(team)).to.equal(31);
    expect(spent(team)).to.equal(21);
    expect(left(team)).to.equal(9);
    expect(Number(charged.get(team))).to.equal(21);
  });
});
