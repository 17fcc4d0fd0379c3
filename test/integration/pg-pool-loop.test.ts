// The delivery loop on PostgreSQL with a pool (issue 38, docs/async-store.md step 2): its claims, lease confirmations
// and next due time are awaited on connections of the pool, so a claim the database makes wait does not stop the
// event loop. Another session holds `deliveries` in EXCLUSIVE mode for 1.5 s (the server ends it by itself: the test
// process sends nothing meanwhile); the loop is woken to claim. With the pool the claim waits on a pooled connection
// while timers keep firing; without it (MTA_PG_POOL_SIZE=0) the synchronous claim holds the event loop until the
// lock goes, which is what this test would see if the loop still claimed synchronously. Both loops deliver afterwards.
// PostgreSQL only (MTA_TEST_ENGINE=pg).
import { expect } from 'chai';
import pg from 'pg';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { testEngine } from '../helpers/service.js';
import type { OutboundLoop } from '../../src/outbound/index.js';
import { poolOf } from '../../src/store/pg/plan-driver.js';

const HOLD_S = 1.5;

async function claimUnderLock(pgPoolSize: number) {
  const e: OutboundEnv = await outboundEnv({ pgPoolSize });
  const locker = new pg.Client({ connectionString: e.s.config.databaseUrl });
  const watcher = new pg.Client({ connectionString: e.s.config.databaseUrl });
  try {
    const loop = (e.s.svc as any).components.find((c: any) => c.name === 'outbound') as OutboundLoop;
    const first = await e.send({ to: 'first@rcpt.test' });
    await e.waitStatus(first.id, ['delivered']);
    await locker.connect();
    await watcher.connect();
    // One simple query: the lock, its hold and its end go out together; the server releases it after HOLD_S.
    const held = locker.query(`BEGIN; LOCK TABLE deliveries IN EXCLUSIVE MODE; SELECT pg_sleep(${HOLD_S}); COMMIT`);
    const granted = `SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'deliveries'::regclass AND mode = 'ExclusiveLock' AND granted`;
    while ((await watcher.query(granted)).rows[0].n === 0) await sleep(10);
    const claimsBefore = loop.stats().claimQueries;
    let last = Date.now();
    let maxGap = 0;
    let waitingOnPool = 0;
    const timer = setInterval(() => {
      const now = Date.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      waitingOnPool = Math.max(waitingOnPool, poolOf(e.s.db)?.inFlight ?? 0);
    }, 10);
    loop.wake();
    await sleep(HOLD_S * 1000 + 300);
    clearInterval(timer);
    await held;
    const claims = loop.stats().claimQueries - claimsBefore;
    const after = await e.send({ to: 'after@rcpt.test' });
    await e.waitStatus(after.id, ['delivered']);
    return { maxGap, claims, waitingOnPool };
  } finally {
    await locker.end().catch(() => undefined);
    await watcher.end().catch(() => undefined);
    await e.close();
  }
}

describe('PostgreSQL: the delivery loop awaits its claims on the pool', function () {
  this.timeout(60_000);
  before(function () {
    if (testEngine() !== 'pg') this.skip();
  });

  it('keeps the event loop running while a claim waits for a lock, and delivers after it', async () => {
    const r = await claimUnderLock(4);
    expect(r.claims, 'claims made while the lock was held').to.be.at.least(1);
    expect(r.waitingOnPool, 'plans waiting on the pool').to.be.at.least(1);
    // The lock held 1.5 s; the 10 ms timer never stopped for anything near that.
    expect(r.maxGap).to.be.below(HOLD_S * 1000 * 0.5);
  });

  it('without a pool (MTA_PG_POOL_SIZE=0) the synchronous claim holds the event loop until the lock goes', async () => {
    const r = await claimUnderLock(0);
    expect(r.claims).to.be.at.least(1);
    expect(r.waitingOnPool).to.equal(0);
    expect(r.maxGap).to.be.above(HOLD_S * 1000 * 0.5);
  });
});
