// The queue summary's counters (migration 013) against a full recount after each step of a mixed workload
// through the real service (submit, deliver, defer, bounce, hold, release, purge, cancel), and the backfill.
import fs from 'node:fs';
import { expect } from 'chai';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as operations } from '../../src/features/operations.js';
import { parseFilter, queueAction, queueSummary } from '../../src/services/queue.js';
import { summarize } from '../../src/store/queue-admin.js';
import { summarizeFromCounts } from '../../src/store/queue-counts.js';

const MIGRATION = new URL('../../src/store/migrations/013_queue_counts.sql', import.meta.url);
const RECOUNT = `SELECT e.team_id, d.domain, count(*) AS recipients, sum(d.held_at IS NOT NULL) AS held,
  sum(d.held_at IS NULL AND d.attempts > 0) AS deferred FROM deliveries d JOIN emails e ON e.seq = d.email_seq
  WHERE d.status IN ('queued', 'sent', 'delivery_delayed') GROUP BY 1, 2 ORDER BY 1, 2`;
const COUNTERS = 'SELECT team_id, domain, recipients, held, deferred FROM queue_counts ORDER BY 1, 2';

describe('queue summary counters', function () {
  this.timeout(30000);
  let e: OutboundEnv;
  after(() => e?.close());

  /** Counters = recount, row for row (no zero rows left), and the summary's groups = the scan's. */
  function check(step: string, waiting: number): void {
    const db = e.s.db;
    const counters = db.prepare(COUNTERS).all();
    expect(counters, step).to.deep.equal(db.prepare(RECOUNT).all());
    const total = counters.reduce((n: number, r: any) => n + r.recipients, 0);
    expect(total, `${step}: waiting recipients`).to.equal(waiting);
    const now = e.s.ctx.now();
    for (const by of ['domain', 'team'] as const) {
      const sorted = (rows: any[]) => [...rows].sort((a, b) => a.key.localeCompare(b.key));
      expect(sorted(summarizeFromCounts(db, by)), `${step} by ${by}`).to.deep.equal(sorted(summarize(db, by, {}, now)));
    }
    for (const by of ['site', 'domain', 'team'] as const) {
      const fast = queueSummary(e.s.ctx, by, {});
      // A filter that matches everything takes the scan.
      const scan = queueSummary(e.s.ctx, by, parseFilter(e.s.ctx, { older_than: '0' }));
      expect(
        fast.groups.map((g) => ({ ...g, oldest_seconds: 0 })),
        `${step} summary by ${by}`,
      ).to.deep.equal(scan.groups.map((g) => ({ ...g, oldest_seconds: 0 })));
      for (const [i, g] of fast.groups.entries())
        expect(Math.abs(g.oldest_seconds - scan.groups[i].oldest_seconds)).to.be.at.most(1);
    }
  }

  /** Waits until the email has `n` recipient events of the given type. */
  async function waitEvents(id: string, type: string, n: number): Promise<void> {
    const until = Date.now() + 8000;
    while ((await e.events(id)).filter((x) => x.recipient && x.type === type).length < n) {
      expect(Date.now(), `${id}: ${n} ${type} events`).to.be.below(until);
      await sleep(20);
    }
  }

  it('equal a full recount after every step of a mixed workload, and the backfill recounts them', async () => {
    e = await outboundEnv({
      features: [operations, outbound],
      env: { MTA_RETRY_MIN_SECONDS: '600', MTA_RETRY_MAX_SECONDS: '3600', MTA_QUEUE_LIFETIME_SECONDS: '86400' },
      script: {
        rcpt: (to) =>
          to.startsWith('defer')
            ? { code: 451, message: '4.7.1 Try again later' }
            : to.startsWith('bounce')
              ? { code: 550, message: '5.1.1 No such user' }
              : undefined,
      },
    });
    check('empty', 0);
    const later = new Date(Date.now() + 3600e3).toISOString();
    const scheduled = [];
    for (const to of [['s1@rcpt.test', 's2@other.test'], ['s3@other.test'], ['s4@rcpt.test', 's5@rcpt.test']])
      scheduled.push(await e.send({ to, scheduled_at: later }));
    check('submitted (scheduled)', 5);
    const ok = await e.send({ to: ['a@rcpt.test', 'b@other.test'] });
    const mixed = await e.send({ to: ['c@rcpt.test', 'defer1@other.test', 'bounce1@rcpt.test'] });
    const deferred = await e.send({ to: ['defer2@rcpt.test', 'defer3@other.test'] });
    const bounced = await e.send({ to: ['bounce2@other.test'] });
    await e.waitStatus(ok.id, ['delivered']);
    await e.waitStatus(bounced.id, ['bounced']);
    await waitEvents(mixed.id, 'delivery_delayed', 1);
    await waitEvents(mixed.id, 'bounced', 1);
    await waitEvents(deferred.id, 'delivery_delayed', 2);
    check('delivered, deferred, bounced', 8);
    expect(
      queueSummary(e.s.ctx, 'domain', {}).groups.map((g) => [g.key, g.recipients, g.held, g.deferred]),
    ).to.deep.equal([
      ['other.test', 4, 0, 2],
      ['rcpt.test', 4, 0, 1],
    ]);
    expect((await queueAction(e.s.ctx, 'hold', parseFilter(e.s.ctx, { domain: 'other.test' }))).matched).to.equal(4);
    check('held by domain', 8);
    expect(queueSummary(e.s.ctx, 'domain', {}).groups.find((g) => g.key === 'other.test')).to.include({
      held: 4,
      deferred: 0,
    });
    await queueAction(e.s.ctx, 'release', parseFilter(e.s.ctx, { email: deferred.id }));
    check('released one email', 8);
    await waitEvents(deferred.id, 'delivery_delayed', 3); // defer3 attempted again at once, deferred again
    check('released and deferred again', 8);
    expect((await queueAction(e.s.ctx, 'purge', parseFilter(e.s.ctx, { email: mixed.id }))).matched).to.equal(1);
    check('purged one recipient', 7);
    const cancel = await e.s.api('POST', `/v1/emails/${scheduled[2].id}/cancel`, { key: e.live });
    expect(cancel.status, JSON.stringify(cancel.body)).to.equal(200);
    check('canceled', 5);
    await queueAction(e.s.ctx, 'purge', parseFilter(e.s.ctx, { domain: 'other.test' }));
    check('purged a domain', 2);
    expect(queueSummary(e.s.ctx, 'domain', {}).groups.map((g) => g.key)).to.deep.equal(['rcpt.test']);

    // The migration's backfill, run again over the same rows, writes the counters the triggers kept.
    const kept = e.s.db.prepare(COUNTERS).all();
    const backfill = /INSERT INTO queue_counts[^;]+;/.exec(fs.readFileSync(MIGRATION, 'utf8'))![0];
    e.s.db.exec('DELETE FROM queue_counts');
    e.s.db.exec(backfill);
    expect(e.s.db.prepare(COUNTERS).all()).to.deep.equal(kept);
    expect(() => e.s.db.prepare("UPDATE deliveries SET domain = 'x.test'").run()).to.throw(/never change/);
  });
});
