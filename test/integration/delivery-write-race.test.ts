// A recipient's status written from a stale read changes nothing: the delivery loop read a recipient, an operator's
// purge committed on another connection (the CLI, another node), and the loop's result then came. On PostgreSQL
// (READ COMMITTED) the old unconditional UPDATE overwrote the purge, and the purged recipient was retried.
import { expect } from 'chai';
import { startTestService, tempDir, openTestDb, type TestService } from '../helpers/service.js';
import { emailByPublicId, deliveriesOf, writeDeliveryFrom } from '../../src/store/emails.js';
import { applyOutcomesPlan } from '../../src/services/transition.js';
import { runSync } from '../../src/store/op.js';

describe('recipient writes from a stale read', function () {
  this.timeout(30_000);
  let s: TestService;
  let dir: string;
  before(async () => {
    dir = tempDir();
    s = await startTestService({ dataDir: dir });
  });
  after(() => s?.close());

  async function queued(to: string) {
    const team = s.team();
    const key = s.key(team.id, 'test', ['emails:send']);
    const r = await s.api('POST', '/v1/emails', { key, body: { from: 'a@sender.test', to, subject: 's', text: 'x' } });
    expect(r.status).to.equal(202);
    const email = runSync(emailByPublicId(s.db, r.body.id))!;
    return { email, d: runSync(deliveriesOf(s.db, email.seq))[0] };
  }
  async function purgeElsewhere(id: number) {
    const other = await openTestDb(dir); // another connection, as the CLI's
    other
      .prepare("UPDATE deliveries SET status = 'failed', reason = 'purged', next_attempt_at = NULL WHERE id = ?")
      .run(id);
    other.close();
  }

  it('writes nothing once another connection changed the status it was read with', async () => {
    const { d } = await queued('x@rcpt.test');
    await purgeElsewhere(d.id);
    const w = {
      status: 'delivery_delayed' as const,
      attempts: 1,
      next_attempt_at: Date.now(),
      last_reply: null,
      reason: null,
    };
    expect(runSync(writeDeliveryFrom(s.db, d.id, d.status, w, Date.now()))).to.equal(false);
    expect(runSync(deliveriesOf(s.db, d.email_seq))[0]).to.include({
      status: 'failed',
      reason: 'purged',
      next_attempt_at: null,
    });
  });

  it('a late outcome applies to the status the recipient has now (a purged one stays failed, never due)', async () => {
    const { email, d } = await queued('y@rcpt.test');
    await purgeElsewhere(d.id);
    s.db.transaction(() =>
      runSync(
        applyOutcomesPlan(s.ctx, email.seq, [
          { deliveryId: d.id, event: 'deferred', data: { attempt: 1 }, nextAttemptAt: Date.now() + 1000 },
        ]),
      ),
    )();
    expect(runSync(deliveriesOf(s.db, email.seq))[0]).to.include({ status: 'failed', next_attempt_at: null });
  });
});
