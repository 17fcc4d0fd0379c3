// An HTTP worker's new mail to the primary's delivery loop (src/http/cluster-intake.ts), each side on its own: the
// worker leases only under the credit it was granted, gets back what a rolled-back request reserved, and sends a
// turn's emails in one message; the primary hands its loop what the loop takes (granting that credit again) and
// releases to the store, for the claims, what it does not. Both together, through real processes:
// pg-http-workers.test.ts.
import { expect } from 'chai';
import { RemoteIntake, intakeFromWorker, type IntakeMsg } from '../../src/http/cluster-intake.js';
import { setIntake, type Claimed, type EmailRow } from '../../src/services/delivery.js';
import { startTestService, type TestService } from '../helpers/service.js';

const emailRow = (seq: number) => ({ seq }) as EmailRow;
const rowsOf = (...ids: number[]) => ids.map((id) => ({ id }) as Claimed);

describe('HTTP workers: new mail to the primary’s delivery loop', () => {
  it('a worker leases only under its credit, asks for more at most every 100 ms, and sends a turn in one message', async () => {
    const sent: IntakeMsg[] = [];
    const w = new RemoteIntake((m) => sent.push(m));
    w.now = () => 1000;
    expect(w.reserve(1), 'no credit yet').to.equal(null);
    expect(w.reserve(1)).to.equal(null);
    expect(sent, 'asked once').to.deep.equal([{ t: 'ask-intake', have: 0 }]);
    w.granted(3, 500);
    expect(w.reserve(2), 'its lease end').to.equal(1500);
    expect(w.reserve(2), 'one left').to.equal(null);
    w.hand(2, null, []); // that request was rolled back: its two come back
    expect(w.reserve(3)).to.equal(1500);
    sent.length = 0;
    w.hand(1, emailRow(7), rowsOf(70));
    w.hand(2, emailRow(8), rowsOf(80, 81));
    expect(sent, 'not before the turn has handed them all').to.have.length(0);
    await Promise.resolve();
    expect(sent).to.deep.equal([
      {
        t: 'intake',
        items: [
          { n: 1, email: emailRow(7), rows: rowsOf(70) },
          { n: 2, email: emailRow(8), rows: rowsOf(80, 81) },
        ],
      },
    ]);
    expect(w.handed(7), 'sent').to.equal(true);
    expect(w.handed(7), 'asked once per email').to.equal(false);
    expect(w.handed(9), 'never leased: the loop must be woken').to.equal(false);
  });

  describe('the primary', () => {
    let s: TestService;
    before(async () => {
      s = await startTestService({ features: [], env: { MTA_RATE_LIMIT: '0' } });
    });
    after(() => s?.close());

    /** An accepted email whose recipients a worker leased (as its insert would have): its row and recipients. */
    const leased = async (to: string[]) => {
      const team = s.team().id;
      const r = await s.api('POST', '/v1/emails', {
        key: s.key(team, 'test'),
        body: { from: 'a@x.test', to, subject: 's', text: 't' },
      });
      expect(r.status).to.equal(202);
      const email = s.db.prepare('SELECT * FROM emails WHERE id = ?').get((r.body as { id: string }).id) as EmailRow;
      const until = Date.now() + 60_000;
      s.db
        .prepare('UPDATE deliveries SET leased_until = ?, next_attempt_at = ? WHERE email_seq = ?')
        .run(until, until, email.seq);
      const rows = s.db.prepare('SELECT * FROM deliveries WHERE email_seq = ? ORDER BY id').all(email.seq) as Claimed[];
      return { email, rows };
    };
    const stateOf = (seq: number) =>
      s.db.prepare('SELECT leased_until, next_attempt_at FROM deliveries WHERE email_seq = ?').all(seq) as {
        leased_until: number | null;
        next_attempt_at: number | null;
      }[];

    it('hands its loop what the loop takes, and grants that credit again with the lease length', async () => {
      const a = await leased(['one@x.test', 'two@y.test']);
      const handed: unknown[] = [];
      setIntake(s.db, {
        reserve: (n) => (n <= 5 ? s.ctx.now() + 60_000 : null),
        hand: (...args) => handed.push(args),
        notTaken: () => {},
      });
      const grants: [number, number][] = [];
      intakeFromWorker(s.ctx, { t: 'intake', items: [{ n: 2, ...a }] }, (n, ms) => grants.push([n, ms]));
      expect(handed).to.deep.equal([[2, a.email, a.rows]]);
      expect(grants).to.have.length(1);
      expect(grants[0][0]).to.equal(2);
      expect(grants[0][1]).to.be.within(59_000, 60_000);
      expect(
        stateOf(a.email.seq).every((d) => d.leased_until !== null),
        'still leased: the loop has them',
      ).to.equal(true);
      // An ask is granted up to the credit a worker may hold, while the loop would take more.
      intakeFromWorker(s.ctx, { t: 'ask-intake', have: 6 }, (n) => grants.push([n, 0]));
      expect(grants[1][0]).to.equal(250);
    });

    it('releases to the store, due now, what its loop no longer takes, and grants nothing', async () => {
      const a = await leased(['three@x.test']);
      setIntake(s.db, { reserve: () => null, hand: () => expect.fail('not handed'), notTaken: () => {} });
      const grants: number[] = [];
      const before = Date.now();
      intakeFromWorker(s.ctx, { t: 'intake', items: [{ n: 1, ...a }] }, (n) => grants.push(n));
      intakeFromWorker(s.ctx, { t: 'ask-intake', have: 0 }, (n) => grants.push(n));
      expect(grants).to.deep.equal([]);
      const [d] = stateOf(a.email.seq);
      expect(d.leased_until, 'no longer leased').to.equal(null);
      expect(d.next_attempt_at, 'due now, for the claims').to.be.within(before, Date.now());
    });
  });
});
