// The delivery loop's result writer (outbound/results.ts) applies a batch of emails' outcomes in one transaction.
// On PostgreSQL it reads the batch's emails and deliveries in one round trip (readOutcomesAhead), not one per
// email, and writes all the recipients in one UPDATE and all the emails in another (store/result-writes.ts); an
// email that appears twice in a batch is applied once with both items' outcomes. Both engines: every outcome lands
// as if written one email at a time.
import { expect } from 'chai';
import { ResultSink } from '../../src/outbound/results.js';
import { writeResultItem } from '../../src/services/result-batch.js';
import { claimDue } from '../../src/store/queue.js';
import { runSync } from '../../src/store/op.js';
import { storeCounters, tx } from '../../src/store/db.js';
import { onEventPlan } from '../../src/store/events.js';
import { insertEndpoint } from '../../src/store/webhooks.js';
import { enqueueEvent } from '../../src/services/webhooks.js';
import { emailHeadBySeq, type DeliveryRow } from '../../src/store/emails.js';
import {
  applyOutcomesPlan,
  isOutcomeRace,
  OutcomeBatch,
  OutcomeRace,
  verifyOutcomesPlan,
} from '../../src/services/transition.js';
import { locksOnPool, poolOf } from '../../src/store/pg/plan-driver.js';
import { testEngine, type TestService } from '../helpers/service.js';
import { flushCounted, resultEnv, writeChecked, type ResultEnv } from './result-env.js';

describe('result writer: a batch of outcomes in one transaction', function () {
  this.timeout(60_000);
  let s: TestService;
  let teamId: string;
  let send: ResultEnv['send'];
  before(async () => {
    ({ s, teamId, send } = await resultEnv());
  });
  after(() => s?.close());

  const statuses = (seq: number) =>
    s.db.prepare('SELECT recipient, status FROM deliveries WHERE email_seq = ? ORDER BY id').all(seq);
  const ok = { attempt: 1, smtp_code: 250, source: 'smtp' };
  const hard = { attempt: 1, smtp_code: 550, reason: 'userunknown', hard: true, source: 'smtp' };

  it('writes 12 emails and an email split over two items in 2 round trips on PostgreSQL, the second not waited for', async () => {
    const singles: number[] = [];
    for (let i = 0; i < 12; i++) singles.push(await send([`r${i}@rcpt.test`]));
    const split = await send(['first@rcpt.test', 'second@rcpt.test']);
    const twice = await send(['twice@rcpt.test']);
    const now = Date.now();
    const claimed = tx(s.db, () => runSync(claimDue(s.db, now + 1000, now + 60_000, 100)));
    expect(claimed).to.have.length(15);
    const idsOf = (seq: number) =>
      claimed
        .filter((c) => c.email_seq === seq)
        .map((c) => c.id)
        .sort((a, b) => a - b); // recipients in the order they were given (a claim returns them in any order)

    const flushed: number[] = [];
    // Under the claims just made, as the delivery loop writes: each write checks its recipient's lease token.
    const tokens = new Map(claimed.map((c) => [c.id, c.leased_until]));
    const sink = new ResultSink(s.ctx, (ids) => flushed.push(...ids), {
      delayMs: 60_000,
      max: 1000,
      leaseOf: (id) => tokens.get(id) ?? null,
    });
    for (const seq of singles) sink.push(seq, [{ deliveryId: idsOf(seq)[0], event: 'accepted', data: ok }], idsOf(seq));
    const [first, second] = idsOf(split);
    sink.push(split, [{ deliveryId: first, event: 'accepted', data: ok }], [first]);
    sink.push(split, [{ deliveryId: second, event: 'rejected', data: hard }], [second]);
    // Delivered, then a complaint: one write of the recipient, from the status it was read in to the last.
    const [once] = idsOf(twice);
    const complaint = { attempt: 1, reason: 'feedback', source: 'simulated' };
    sink.push(
      twice,
      [
        { deliveryId: once, event: 'accepted', data: ok },
        { deliveryId: once, event: 'complaint', data: complaint },
      ],
      [once],
    );

    // PostgreSQL with the credit lock's holders on the pool (MTA_PG_POOLED_TURNS on, the default): the batch is a
    // transaction there, awaited; otherwise on the synchronous connection, its COMMIT sent without waiting.
    const pool = locksOnPool(s.db) ? poolOf(s.db)! : null;
    const poolBefore = pool && { roundTrips: pool.roundTrips, statements: pool.statements };
    const c = flushCounted(s, sink);
    if (c && pool) expect(c.roundTrips, 'nothing on the synchronous connection').to.equal(0);
    else if (c) {
      // BEGIN with the batch's reads (the split email read once: its items are applied together); the writes,
      // checked by the server, with the COMMIT, sent without waiting. Whatever the number of emails.
      expect(c.roundTrips, 'round trips').to.equal(2);
      expect(c.inFlight, 'COMMIT in flight when flush returns').to.equal(true);
      // One UPDATE for all the recipients and one for all the emails (45 statements when each email had its own);
      // the per-site counters (migration 027, coalesced inserts of their deltas) add up to 3.
      expect(c.statements, 'statements').to.be.at.most(19);
    }
    // The loop hears of the batch once it is written: at once on SQLite, when the COMMIT's answer is read on PostgreSQL.
    if (testEngine() === 'pg') expect(flushed).to.deep.equal([]);
    await sink.settled();
    if (pool && poolBefore) {
      // The same two round trips on a connection of the pool: BEGIN with the batch's reads; the writes, checked by
      // the server, with the COMMIT.
      expect(pool.roundTrips - poolBefore.roundTrips, 'round trips on the pool').to.equal(2);
      // Its INSERTs merged as the synchronous client merges them (store/pg/coalesce.ts): 123 statements without.
      expect(pool.statements - poolBefore.statements, 'statements on the pool').to.be.at.most(21);
    }

    expect(flushed.sort((a, b) => a - b)).to.deep.equal(claimed.map((c) => c.id).sort((a, b) => a - b));
    for (const [i, seq] of singles.entries()) {
      expect(statuses(seq)).to.deep.equal([{ recipient: `r${i}@rcpt.test`, status: 'delivered' }]);
      expect(s.db.prepare('SELECT status FROM emails WHERE seq = ?').pluck().get(seq)).to.equal('delivered');
    }
    expect(statuses(twice)).to.deep.equal([{ recipient: 'twice@rcpt.test', status: 'complained' }]);
    expect(statuses(split)).to.deep.equal([
      { recipient: 'first@rcpt.test', status: 'delivered' },
      { recipient: 'second@rcpt.test', status: 'bounced' },
    ]);
    // The second item saw the first's write: the email is neither all delivered nor all bounced.
    const types = s.db
      .prepare('SELECT type FROM events WHERE email_seq = ? ORDER BY seq')
      .pluck()
      .all(split) as string[];
    expect(types.filter((t) => t === 'delivered')).to.have.length(1);
    expect(types.filter((t) => t === 'bounced')).to.have.length(1);
    const leased = s.db.prepare('SELECT count(*) FROM deliveries WHERE leased_until IS NOT NULL').pluck().get();
    expect(Number(leased)).to.equal(0);
  });

  it('a write whose recipient changed since the read undoes the batch (OutcomeRace), and nothing is kept', async () => {
    const seq = await send(['raced@rcpt.test']);
    const [read] = s.db.prepare('SELECT * FROM deliveries WHERE email_seq = ?').all(seq) as DeliveryRow[];
    s.db.prepare("UPDATE deliveries SET status = 'canceled', next_attempt_at = NULL WHERE id = ?").run(read.id);
    const head = runSync(emailHeadBySeq(s.db, seq))!;
    const events = () => s.db.prepare('SELECT count(*) FROM events WHERE email_seq = ?').pluck().get(seq);
    const eventsBefore = events();
    expect(() =>
      tx(s.db, () => {
        const writes = new OutcomeBatch();
        // As read before another connection canceled it: the write finds the row no longer queued.
        const outcome = { deliveryId: read.id, event: 'accepted' as const, data: ok };
        runSync(applyOutcomesPlan(s.ctx, seq, [outcome], new Set(), { pre: { head, deliveries: [read] }, writes }));
        runSync(verifyOutcomesPlan(s.ctx, writes));
      }),
    ).to.throw(OutcomeRace);
    expect(statuses(seq)).to.deep.equal([{ recipient: 'raced@rcpt.test', status: 'canceled' }]);
    expect(events()).to.equal(eventsBefore);
    expect(testEngine()).to.be.oneOf(['sqlite', 'pg']);
  });

  it('an endpoint subscribed to the events costs no read of the email per event; payloads show its new status', async () => {
    runSync(
      insertEndpoint(s.db, {
        id: 'we_batch',
        team_id: teamId,
        mode: 'test',
        url: 'http://127.0.0.1:9/hook',
        events: 'sent delivered',
        secret: 'whsec_batch',
        enabled: 1,
        created_at: Date.now(),
        updated_at: Date.now(),
      }),
    );
    onEventPlan(s.ctx.db, (db, ev, email) => enqueueEvent(s.ctx, db, ev, email));
    const seqs: number[] = [];
    for (let i = 0; i < 8; i++) seqs.push(await send([`hook${i}@rcpt.test`]));
    const now = Date.now();
    const claimed = tx(s.db, () => runSync(claimDue(s.db, now + 1000, now + 60_000, 100)));
    expect(claimed).to.have.length(8);
    const sink = new ResultSink(s.ctx, () => {}, { delayMs: 60_000, max: 1000 });
    for (const c of claimed) sink.push(c.email_seq, [{ deliveryId: c.id, event: 'accepted', data: ok }], [c.id]);
    const before = storeCounters(s.db);
    sink.flush();
    await sink.settled();
    const after = storeCounters(s.db);
    // 16 events (sent, delivered) with an outbox row each: one read of the team's endpoints at most, no email read.
    if (before && after) expect(after.roundTrips - before.roundTrips, 'round trips').to.be.at.most(4);
    const payloads = s.db
      .prepare(
        "SELECT o.event_type, o.payload FROM webhook_deliveries o JOIN webhook_endpoints e ON e.seq = o.endpoint_seq WHERE e.id = 'we_batch'",
      )
      .all() as { event_type: string; payload: string }[];
    expect(payloads).to.have.length(16);
    for (const p of payloads) expect(JSON.parse(p.payload).data.email.status, p.event_type).to.equal('delivered');
  });

  it('a batch whose COMMIT is sent without waiting is undone by the server when a recipient changed since the read', async () => {
    const seqs = [await send(['kept@rcpt.test']), await send(['raced2@rcpt.test'])];
    const rows = seqs.map(
      (seq) => (s.db.prepare('SELECT * FROM deliveries WHERE email_seq = ?').all(seq) as DeliveryRow[])[0],
    );
    s.db.prepare("UPDATE deliveries SET status = 'canceled', next_attempt_at = NULL WHERE id = ?").run(rows[1].id);
    const heads = seqs.map((seq) => runSync(emailHeadBySeq(s.db, seq))!);
    const events = () =>
      Number(
        s.db
          .prepare('SELECT count(*) FROM events WHERE email_seq IN (?, ?)')
          .pluck()
          .get(...seqs),
      );
    const eventsBefore = events();
    // As read before another connection canceled the second: its write finds the row no longer queued.
    const error = await writeChecked(
      s,
      seqs.map((seq, i) => ({
        seq,
        outcomes: [{ deliveryId: rows[i].id, event: 'accepted' as const, data: ok }],
        pre: { head: heads[i], deliveries: [rows[i]] },
      })),
    );
    expect(isOutcomeRace(error), String(error)).to.equal(true);
    // Nothing of the batch was kept: not the first email's delivery, not the events.
    expect(statuses(seqs[0])).to.deep.equal([{ recipient: 'kept@rcpt.test', status: 'queued' }]);
    expect(statuses(seqs[1])).to.deep.equal([{ recipient: 'raced2@rcpt.test', status: 'canceled' }]);
    expect(events()).to.equal(eventsBefore);
  });

  it('one email at a time under its claims: a recipient’s two outcomes both written, one claimed since by another node not touched', async () => {
    const again = await send(['again@rcpt.test']);
    const taken = await send(['taken@rcpt.test']);
    const now = Date.now();
    const claimed = tx(s.db, () => runSync(claimDue(s.db, now + 1000, now + 60_000, 100)));
    const mine = claimed.find((c) => c.email_seq === again)!;
    const theirs = claimed.find((c) => c.email_seq === taken)!;
    const tokens = new Map(claimed.map((c) => [c.id, c.leased_until]));
    // Another node's claim of `taken` once this lease ended: its own lease end.
    s.db
      .prepare('UPDATE deliveries SET leased_until = ?, next_attempt_at = ? WHERE id = ?')
      .run(now + 9e6, now + 9e6, theirs.id);
    const events = (seq: number) =>
      s.db.prepare('SELECT type FROM events WHERE email_seq = ? ORDER BY seq').pluck().all(seq) as string[];
    const complaint = { attempt: 1, reason: 'feedback', source: 'simulated' };
    // Delivered, then a complaint (a simulated complained@), written at once: the first write takes the claim.
    const lostMine = tx(s.db, () =>
      writeResultItem(
        s.ctx,
        {
          emailSeq: again,
          outcomes: [
            { deliveryId: mine.id, event: 'accepted', data: ok },
            { deliveryId: mine.id, event: 'complaint', data: complaint },
          ],
          ids: [mine.id],
        },
        tokens,
      ),
    );
    const lostTheirs = tx(s.db, () =>
      writeResultItem(
        s.ctx,
        { emailSeq: taken, outcomes: [{ deliveryId: theirs.id, event: 'accepted', data: ok }], ids: [theirs.id] },
        tokens,
      ),
    );
    expect(lostMine).to.deep.equal([]);
    expect(statuses(again)).to.deep.equal([{ recipient: 'again@rcpt.test', status: 'complained' }]);
    expect(events(again)).to.include.members(['delivered', 'complained']);
    expect(lostTheirs).to.deep.equal([theirs.id]);
    expect(statuses(taken)).to.deep.equal([{ recipient: 'taken@rcpt.test', status: 'queued' }]);
    expect(events(taken)).to.deep.equal(['queued']);
    const row = s.db.prepare('SELECT leased_until FROM deliveries WHERE id = ?').get(theirs.id) as any;
    expect(Number(row.leased_until), "the other node's lease kept").to.equal(now + 9e6);
  });
});
