// The one rate limiter (src/http/rate-limit) and the sign-in guard built on it: token-bucket answers as
// documented (docs/api.md, docs/dashboard.md) and memory that stays bounded under 100,000 client addresses.
import { expect } from 'chai';
import { RateLimiter, DEFAULT_MAX_KEYS } from '../../src/http/rate-limit.js';
import { SignInGuard } from '../../src/http/dashboard/sign-in-guard.js';

function clock(start = 1_700_000_000_000) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}
const address = (i: number) => `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

describe('rate limiter', () => {
  it('is a token bucket: 50/s with bursts of 100, with the documented remaining, reset and retry-after', () => {
    const c = clock();
    const l = new RateLimiter(50, 100, c.now);
    const first = l.take('key');
    expect(first).to.deep.equal({ ok: true, remaining: 99, reset: 1, retryAfter: 1 });
    for (let i = 0; i < 99; i++) expect(l.take('key').ok).to.equal(true);
    const refused = l.take('key');
    expect(refused).to.deep.equal({ ok: false, remaining: 0, reset: 2, retryAfter: 1 });
    expect(l.take('other').ok, 'keys are independent').to.equal(true);
    c.advance(20); // one token at 50/s
    expect(l.take('key').ok).to.equal(true);
    expect(l.take('key').ok).to.equal(false);
    const slow = new RateLimiter(0.1, 1, c.now);
    slow.take('a');
    expect(slow.take('a')).to.include({ ok: false, retryAfter: 10 });
  });

  it('peek reports without taking; refill forgets a key', () => {
    const l = new RateLimiter(1, 2, clock().now);
    l.take('a');
    l.take('a');
    expect(l.peek('a').ok).to.equal(false);
    expect(l.peek('a').ok).to.equal(false);
    l.refill('a');
    expect(l.peek('a')).to.include({ ok: true, remaining: 2 });
  });

  it('holds at most maxKeys buckets while 100,000 distinct client addresses come by', () => {
    const c = clock();
    const l = new RateLimiter(50, 100, c.now);
    let most = 0;
    for (let i = 0; i < 100_000; i++) {
      l.take(address(i));
      if (i % 1000 === 0) c.advance(1); // all within one burst window: none has refilled
      most = Math.max(most, l.size);
    }
    expect(most).to.equal(DEFAULT_MAX_KEYS);
    expect(l.size).to.equal(DEFAULT_MAX_KEYS);
  });

  it('keeps a recently used empty bucket while others come and go, and drops refilled ones as it goes', () => {
    const c = clock();
    const l = new RateLimiter(50, 100, c.now, 1000);
    for (let i = 0; i < 101; i++) l.take('abuser');
    for (let i = 0; i < 999; i++) l.take(address(i));
    expect(l.take('abuser').ok, 'still limited').to.equal(false);
    c.advance(10_000); // every bucket is full again
    for (let i = 0; i < 600; i++) l.take(`late:${i}`);
    // Each take dropped up to two refilled buckets and kept its own.
    expect(l.size).to.be.at.most(600);
  });
});

describe('operator sign-in guard (on the rate limiter)', () => {
  it('locks an address after 10 failures for ten minutes, then allows one more attempt', () => {
    const c = clock();
    const g = new SignInGuard(c.now);
    for (let i = 0; i < 10; i++) {
      expect(g.refusal('198.51.100.8')).to.equal(null);
      g.failed('198.51.100.8');
      c.advance(3_500); // slower than the global budget refills
    }
    const locked = g.refusal('198.51.100.8')!;
    expect(locked.scope).to.equal('address');
    expect(locked.retryAfterSec).to.be.within(565, 566); // 600 s less what 35 s gave back
    expect(g.refusal('198.51.100.9')).to.equal(null);
    c.advance(locked.retryAfterSec * 1000);
    expect(g.refusal('198.51.100.8')).to.equal(null);
    g.failed('198.51.100.8');
    expect(g.refusal('198.51.100.8')).to.include({ scope: 'address' });
  });

  it('pauses everyone after a burst of 20 failures, 1 minute then doubling', () => {
    const c = clock();
    const g = new SignInGuard(c.now);
    for (let i = 0; i < 19; i++) expect(g.failed(`203.0.113.${i}`)).to.equal(null);
    expect(g.failed('203.0.113.19')).to.equal(60_000);
    expect(g.refusal('192.0.2.1')).to.deep.equal({ scope: 'global', retryAfterSec: 60 });
    c.advance(61_000);
    expect(g.refusal('192.0.2.1')).to.equal(null);
    for (let i = 0; i < 19; i++) g.failed(`203.0.113.${100 + i}`);
    expect(g.failed('203.0.113.200')).to.equal(120_000);
  });

  it('remembers at most 10,000 addresses after failures from 100,000 distinct ones', () => {
    const c = clock();
    const g = new SignInGuard(c.now);
    for (let i = 0; i < 100_000; i++) {
      g.failed(address(i));
      if (i % 1000 === 0) c.advance(1);
    }
    expect(g.byAddress.size).to.equal(10_000);
  });
});
