// Results of recipients the delivery loop took in their very insert (services/delivery.ts Intake): the loop knows the
// email and all its recipients as inserted, so on PostgreSQL the results batch writes them without reading them
// first (services/transition.ts knownReads), the server checking that neither a recipient nor the email changed
// since (an operator's action), and filling from the row what the write leaves out (store/result-writes.ts).
// SQLite writes them without reading them too (session 23), each write a compare-and-set whose count of changed rows
// verifyOutcomes checks. Both engines: every outcome lands as if the rows had been read.
import { expect } from 'chai';
import { ResultSink } from '../../src/outbound/results.js';
import { claimDue } from '../../src/store/queue.js';
import { runSync } from '../../src/store/op.js';
import { tx } from '../../src/store/db.js';
import { emailHeadBySeq } from '../../src/store/emails.js';
import { isOutcomeRace, knownReads, type OutcomeReads } from '../../src/services/transition.js';
import type { Claimed } from '../../src/store/queue.js';
import type { TestService } from '../helpers/service.js';
import { flushCounted, resultEnv, writeChecked, type ResultEnv } from './result-env.js';

describe('result writer: recipients the loop took in their insert are written without a read', function () {
  this.timeout(60_000);
  let s: TestService;
  let send: ResultEnv['send'];
  before(async () => {
    // The synchronous connection's batch (MTA_PG_POOLED_TURNS=off), whose round trips flushCounted counts; with the
    // default, the pool runs the same plans (result-batch.test.ts counts its trips there).
    ({ s, send } = await resultEnv({ pooledTurns: false }));
  });
  after(() => s?.close());

  /** Claims the emails' recipients, and what the loop would know of each email (its head as inserted). */
  const take = (seqs: number[]) => {
    const heads = new Map(seqs.map((seq) => [seq, runSync(emailHeadBySeq(s.db, seq))!]));
    const now = Date.now();
    const claimed = tx(s.db, () => runSync(claimDue(s.db, now + 1000, now + 60_000, 100))).filter((c) =>
      heads.has(c.email_seq),
    );
    const of = (seq: number): Claimed[] => claimed.filter((c) => c.email_seq === seq);
    const known = (seq: number): OutcomeReads => knownReads(heads.get(seq)!, of(seq));
    return { of, known };
  };
  const row = (seq: number) =>
    s.db
      .prepare('SELECT status, next_attempt_at, last_reply, attempts, leased_until FROM deliveries WHERE email_seq = ?')
      .get(seq) as { status: string; next_attempt_at: number | null; last_reply: string | null; attempts: number };
  const emailStatus = (seq: number) => s.db.prepare('SELECT status FROM emails WHERE seq = ?').pluck().get(seq);
  const ok = { attempt: 1, smtp_code: 250, smtp_response: '250 2.0.0 OK', source: 'smtp' };

  it('writes a batch of such emails in ONE round trip on PostgreSQL (no read), with what reading them would write', async () => {
    const seqs: number[] = [];
    for (let i = 0; i < 8; i++) seqs.push(await send([`k${i}@rcpt.test`]));
    const { of, known } = take(seqs);
    const sink = new ResultSink(s.ctx, () => {}, { delayMs: 60_000, max: 1000 });
    for (const seq of seqs) {
      const [r] = of(seq);
      sink.push(seq, [{ deliveryId: r.id, event: 'accepted', data: ok }], [r.id], undefined, known(seq));
    }
    const c = flushCounted(s, sink);
    // PostgreSQL: the writes, checked by the server, and the COMMIT, sent without waiting; nothing read first.
    if (c) expect(c).to.deep.include({ roundTrips: 1, inFlight: true });
    await sink.settled();
    for (const seq of seqs) {
      expect(row(seq)).to.deep.include({ status: 'delivered', next_attempt_at: null, leased_until: null });
      expect(row(seq).last_reply).to.equal('250 2.0.0 OK');
      expect(Number(row(seq).attempts)).to.equal(1);
      expect(emailStatus(seq)).to.equal('delivered');
      const types = s.db.prepare('SELECT type FROM events WHERE email_seq = ? ORDER BY seq').pluck().all(seq);
      expect(types).to.deep.equal(['queued', 'sent', 'delivered']);
    }
  });

  it('a recipient held since it was taken keeps no retry time when its attempt is deferred', async () => {
    const seq = await send(['held@rcpt.test']);
    const { of, known } = take([seq]);
    const [r] = of(seq);
    s.db.prepare('UPDATE deliveries SET held_at = ? WHERE id = ?').run(Date.now(), r.id); // an operator's hold
    const sink = new ResultSink(s.ctx, () => {}, { delayMs: 60_000, max: 1000 });
    const deferred = { attempt: 1, smtp_code: 451, smtp_response: '451 4.7.1 later', source: 'smtp' };
    sink.push(
      seq,
      [{ deliveryId: r.id, event: 'deferred', data: deferred, nextAttemptAt: Date.now() + 60_000 }],
      [r.id],
      undefined,
      known(seq),
    );
    await sink.close();
    expect(row(seq)).to.deep.include({ status: 'delivery_delayed', next_attempt_at: null });
    expect(emailStatus(seq)).to.equal('delivery_delayed');
  });

  it('a recipient canceled since it was taken is left canceled; the batch is written one email at a time', async () => {
    const seqs = [await send(['fine@rcpt.test']), await send(['gone@rcpt.test'])];
    const { of, known } = take(seqs);
    s.db
      .prepare("UPDATE deliveries SET status = 'canceled', next_attempt_at = NULL WHERE id = ?")
      .run(of(seqs[1])[0].id);
    const sink = new ResultSink(s.ctx, () => {}, { delayMs: 60_000, max: 1000 });
    for (const seq of seqs) {
      const [r] = of(seq);
      sink.push(seq, [{ deliveryId: r.id, event: 'accepted', data: ok }], [r.id], undefined, known(seq));
    }
    await sink.close();
    expect(row(seqs[0]).status).to.equal('delivered');
    expect(row(seqs[1]).status).to.equal('canceled');
    const delivered = s.db
      .prepare("SELECT count(*) FROM events WHERE email_seq = ? AND type = 'delivered'")
      .pluck()
      .get(seqs[1]);
    expect(Number(delivered)).to.equal(0);
  });

  it('an email whose status changed since it was taken undoes the batch, and nothing is kept', async () => {
    const seq = await send(['moved@rcpt.test']);
    const { of, known } = take([seq]);
    const reads = known(seq);
    s.db.prepare("UPDATE emails SET status = 'sent' WHERE seq = ?").run(seq); // changed under the loop's knowledge
    const events = () => Number(s.db.prepare('SELECT count(*) FROM events WHERE email_seq = ?').pluck().get(seq));
    const eventsBefore = events();
    const outcome = { deliveryId: of(seq)[0].id, event: 'accepted' as const, data: ok };
    const error = await writeChecked(s, [{ seq, outcomes: [outcome], pre: reads }]);
    // PostgreSQL: the server's check fails the COMMIT; SQLite: the email's compare-and-set changed no row.
    expect(isOutcomeRace(error), String(error)).to.equal(true);
    expect(row(seq).status).to.equal('queued');
    expect(events()).to.equal(eventsBefore);
  });
});
