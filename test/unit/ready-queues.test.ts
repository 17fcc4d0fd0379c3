// Which domains the delivery loop leaves in the store for now (outbound/ready.ts): a backlog that drains as fast as it
// fills is never set aside below half the memory; a slow one (a throttled site) is, once it holds over a quarter of
// memory, its oldest waited a second, and it holds more than two seconds of work at its own rate; any queue holding
// half the memory is full, however fast and fresh.
import { expect } from 'chai';
import { ReadyQueues, type Item } from '../../src/outbound/ready.js';

const item = (domain: string, since: number, id: number) =>
  ({ rcpt: { id, domain }, since, moves: 0 }) as unknown as Item;

/** A queue of `n` items of `domain` that joined at `t0`, of which `started` were taken over the second before `now`. */
function queueWith(qs: ReadyQueues, domain: string, n: number, started: number, t0: number, now: number) {
  const q = qs.queue(`site-${domain}`, ['ip1'], false, [`mx.${domain}`]);
  for (let i = 0; i < n + started; i++) q.push(item(domain, t0, i));
  for (let i = 0; i < started; i++) q.shift(now - 1000 + Math.floor((i * 1000) / started));
  return q;
}

describe('ready queues: slow domains', () => {
  const maxHeld = 1000;
  const now = 1_790_000_000_000;

  it('a long queue that starts 1,000 a second (one busy domain) is not slow', () => {
    const qs = new ReadyQueues();
    queueWith(qs, 'busy.test', 450, 1000, now - 5000, now);
    expect(qs.slowDomains(now, maxHeld)).to.deep.equal([]);
  });

  it('the same queue starting 100 a second (a throttled site) is slow; so is one that started nothing lately', () => {
    const qs = new ReadyQueues();
    queueWith(qs, 'slow.test', 450, 100, now - 5000, now);
    queueWith(qs, 'stuck.test', 300, 0, now - 5000, now);
    expect(qs.slowDomains(now, maxHeld).sort()).to.deep.equal(['slow.test', 'stuck.test']);
  });

  it('a short queue, or one whose oldest waited under a second, is never slow', () => {
    const qs = new ReadyQueues();
    queueWith(qs, 'short.test', 200, 0, now - 5000, now);
    queueWith(qs, 'fresh.test', 450, 0, now - 500, now);
    expect(qs.slowDomains(now, maxHeld)).to.deep.equal([]);
  });

  it('a queue holding half the memory is full, however fast it drains and however fresh its items', () => {
    const qs = new ReadyQueues();
    queueWith(qs, 'busy.test', 500, 1000, now - 5000, now);
    queueWith(qs, 'fresh.test', 500, 0, now - 10, now);
    queueWith(qs, 'below.test', 499, 1000, now - 10, now);
    expect(qs.slowDomains(now, maxHeld).sort()).to.deep.equal(['busy.test', 'fresh.test']);
    // A small loop's floor: 20 items, not half of 10.
    expect(new ReadyQueues().slowDomains(now, 10)).to.deep.equal([]);
  });
});
