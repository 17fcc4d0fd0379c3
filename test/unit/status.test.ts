// Walks every (state, event) pair of the recipient state machine and the email aggregation rules.
import { expect } from 'chai';
import {
  STATUSES,
  recipientTransition,
  aggregate,
  emailPath,
  canMove,
  FINAL,
  queueState,
  queueTransition,
  QUEUE_ACTIONS,
  appliesTo,
  type QueueAction,
  type Waiting,
  type RecipientEvent,
  type Status,
} from '../../src/core/status.js';

const EVENTS: RecipientEvent[] = [
  'accepted',
  'deferred',
  'rejected',
  'failed',
  'canceled',
  'expired',
  'complaint',
  'async_bounce',
];

const EXPECTED: Record<Status, Partial<Record<RecipientEvent, Status>>> = {
  queued: {
    accepted: 'delivered',
    deferred: 'delivery_delayed',
    rejected: 'bounced',
    failed: 'failed',
    canceled: 'canceled',
    expired: 'bounced',
  },
  sent: {
    accepted: 'delivered',
    deferred: 'delivery_delayed',
    rejected: 'bounced',
    failed: 'failed',
    expired: 'bounced',
  },
  delivery_delayed: {
    accepted: 'delivered',
    deferred: 'delivery_delayed',
    rejected: 'bounced',
    failed: 'failed',
    expired: 'bounced',
  },
  delivered: { complaint: 'complained', async_bounce: 'delivered' },
  bounced: {},
  complained: {},
  failed: {},
  canceled: {},
};

describe('core/status', () => {
  for (const s of STATUSES)
    for (const e of EVENTS) {
      it(`recipient ${s} + ${e} → ${EXPECTED[s][e] ?? 'ignored'}`, () => {
        expect(recipientTransition(s, e)).to.equal(EXPECTED[s][e] ?? null);
      });
    }

  it('final states accept only delivered → complained', () => {
    for (const s of FINAL)
      for (const t of STATUSES) expect(canMove(s, t)).to.equal(s === 'delivered' && t === 'complained');
  });

  it('aggregates recipients as decisions.md says', () => {
    expect(aggregate(['queued', 'queued'])).to.equal('queued');
    expect(aggregate(['delivered', 'queued'])).to.equal('sent');
    expect(aggregate(['delivered', 'delivery_delayed'])).to.equal('delivery_delayed');
    expect(aggregate(['bounced', 'delivery_delayed'])).to.equal('sent');
    expect(aggregate(['delivered', 'delivered'])).to.equal('delivered');
    expect(aggregate(['delivered', 'bounced'])).to.equal('bounced');
    expect(aggregate(['failed', 'failed'])).to.equal('failed');
    expect(aggregate(['failed', 'delivered'])).to.equal('delivered');
    expect(aggregate(['complained', 'delivered'])).to.equal('complained');
    expect(aggregate(['canceled'])).to.equal('canceled');
  });

  it('email paths follow only the allowed edges', () => {
    expect(emailPath('queued', 'delivered')).to.deep.equal(['sent', 'delivered']);
    expect(emailPath('queued', 'delivery_delayed')).to.deep.equal(['sent', 'delivery_delayed']);
    expect(emailPath('delivery_delayed', 'delivered')).to.deep.equal(['delivered']);
    expect(emailPath('delivered', 'complained')).to.deep.equal(['complained']);
    expect(emailPath('delivery_delayed', 'complained')).to.deep.equal(['delivered', 'complained']);
    expect(emailPath('queued', 'complained')).to.deep.equal(['sent', 'delivered', 'complained']);
    expect(emailPath('delivery_delayed', 'failed')).to.deep.equal(['bounced']);
    expect(emailPath('delivered', 'bounced')).to.deep.equal([]);
    expect(emailPath('delivery_delayed', 'sent')).to.deep.equal([]);
    expect(emailPath('bounced', 'delivered')).to.deep.equal([]);
    for (const from of STATUSES)
      for (const to of STATUSES) {
        const path = emailPath(from, to);
        let cur = from;
        for (const step of path) {
          expect(canMove(cur, step), `${from}→${to} via ${cur}→${step}`).to.equal(true);
          cur = step;
        }
      }
  });

  describe('queue states and operator actions', () => {
    const now = 1_000_000;
    const w = (o: Partial<Waiting>): Waiting => ({
      status: 'queued',
      held: false,
      attempts: 0,
      nextAttemptAt: now,
      leasedUntil: null,
      ...o,
    });
    const STATES: Record<string, Waiting> = {
      scheduled: w({ nextAttemptAt: now + 60_000 }),
      due: w({}),
      deferred: w({ status: 'delivery_delayed', attempts: 2, nextAttemptAt: now + 60_000 }),
      held: w({ status: 'delivery_delayed', attempts: 1, held: true, nextAttemptAt: null }),
      in_flight: w({ leasedUntil: now + 30_000, nextAttemptAt: now + 30_000 }),
    };

    it('tells each waiting state; a final recipient is not in the queue', () => {
      for (const [name, r] of Object.entries(STATES)) expect(queueState(r, now), name).to.equal(name);
      expect(queueState(w({ held: true, leasedUntil: now + 1 }), now), 'held wins over in flight').to.equal('held');
      expect(queueState(w({ leasedUntil: now - 1, nextAttemptAt: now - 1 }), now), 'an ended lease is due').to.equal(
        'due',
      );
      for (const s of FINAL) expect(queueState(w({ status: s }), now)).to.equal(null);
    });

    it('walks every (state, action) pair', () => {
      const expected: Record<string, Record<string, string | null>> = {
        scheduled: { hold: 'queued held', release: null, retry: null, purge: 'failed' },
        due: { hold: 'queued held', release: null, retry: null, purge: 'failed' },
        deferred: { hold: 'delivery_delayed held', release: null, retry: 'delivery_delayed due', purge: 'failed' },
        held: { hold: null, release: 'delivery_delayed due', retry: null, purge: 'failed' },
        in_flight: { hold: 'queued held', release: null, retry: null, purge: 'failed' },
      };
      for (const [name, r] of Object.entries(STATES))
        for (const a of QUEUE_ACTIONS) {
          const m = queueTransition(r, a, now);
          const got = m && [m.status, m.held ? 'held' : '', m.due ? 'due' : ''].filter(Boolean).join(' ');
          expect(got, `${name} + ${a}`).to.equal(expected[name][a]);
        }
      for (const s of FINAL)
        for (const a of QUEUE_ACTIONS) expect(queueTransition(w({ status: s }), a, now)).to.equal(null);
    });

    it("a hold remembers who placed it: a team never releases the operator's, the operator releases both", () => {
      const mv = (r: Waiting, a: QueueAction, by: 'team' | 'operator') => {
        const m = queueTransition(r, a, now, by);
        return m && [m.held ? `held by ${m.heldBy}` : 'not held', m.due ? 'due' : ''].filter(Boolean).join(' ');
      };
      const byOperator = w({ held: true, heldBy: 'operator', nextAttemptAt: null });
      const byTeam = w({ held: true, heldBy: 'team', nextAttemptAt: null });
      const unsaid = w({ held: true, nextAttemptAt: null });
      expect(mv(STATES.due, 'hold', 'team')).to.equal('held by team');
      expect(mv(STATES.due, 'hold', 'operator')).to.equal('held by operator');
      expect(mv(byTeam, 'release', 'team')).to.equal('not held due');
      expect(mv(byOperator, 'release', 'team'), "the operator's hold stays").to.equal(null);
      expect(mv(unsaid, 'release', 'team'), "a hold that does not say is the operator's").to.equal(null);
      expect(mv(byOperator, 'release', 'operator')).to.equal('not held due');
      expect(mv(byTeam, 'release', 'operator')).to.equal('not held due');
      expect(mv(byOperator, 'hold', 'team'), "a team's hold never replaces the operator's").to.equal(null);
      expect(mv(byTeam, 'hold', 'operator'), "the operator's hold takes over").to.equal('held by operator');
      expect(mv(byOperator, 'hold', 'operator')).to.equal(null);
      expect(mv(byTeam, 'hold', 'team')).to.equal(null);
      expect(appliesTo('hold', 'operator')).to.include('held');
      expect(appliesTo('hold', 'team')).to.not.include('held');
    });

    it('a purge is the one operator edge delivery_delayed → failed', () => {
      expect(emailPath('delivery_delayed', 'failed', true)).to.deep.equal(['failed']);
      expect(emailPath('delivery_delayed', 'failed')).to.deep.equal(['bounced']);
      expect(emailPath('queued', 'failed', true)).to.deep.equal(['failed']);
    });
  });
});
