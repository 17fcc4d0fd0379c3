// Walks every (state, event) pair of the recipient state machine and the email aggregation rules.
import { expect } from 'chai';
import {
  STATUSES,
  recipientTransition,
  aggregate,
  emailPath,
  canMove,
  FINAL,
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
});
