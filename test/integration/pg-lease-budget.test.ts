// A send confirmed on PostgreSQL's pool after a wait still ends before its lease (src/outbound/loop.ts confirmPooled):
// the lease runs from before the confirmation was awaited, so the transaction gets only what is left of its deadline.
// Lease 5 s, deadline 4 s (MTA_RETRY_MAX_SECONDS=5, outbound/index.ts timings). The recipient domain's MX answers 1 s
// late, during which the test locks the recipient's row for 3 s: the confirmation waits ~2 s for it. The MX then never
// answers DATA. The session must be over before the lease it was confirmed with ends; with the deadline counted from
// after the wait, it ran ~1 s past it, when another node may claim and send the recipient.
// PostgreSQL only (MTA_TEST_ENGINE=pg).
import { expect } from 'chai';
import pg from 'pg';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { testEngine } from '../helpers/service.js';

describe('PostgreSQL: a send confirmed after a wait ends before its lease', function () {
  this.timeout(60_000);
  let e: OutboundEnv | undefined;
  before(function () {
    if (testEngine() !== 'pg') this.skip(); // the pool is PostgreSQL's
  });
  after(() => e?.close());

  it('gets what is left of its deadline', async () => {
    e = await outboundEnv({ script: { data: () => ({ stall: true }) } });
    e.dns.set('slow.test', { MX: [{ exchange: 'mx.slow.test', priority: 10 }], delayMs: 1000 });
    e.dns.set('mx.slow.test', { A: ['127.0.0.1'] });
    const db = new pg.Client({ connectionString: e.s.config.databaseUrl });
    await db.connect();
    try {
      const sent = await e.send({ to: 'r@slow.test' });
      await db.query('BEGIN');
      const row = await db.query(
        `SELECT d.id FROM deliveries d JOIN emails m ON m.seq = d.email_seq WHERE m.id = $1 FOR UPDATE OF d`,
        [sent.id],
      );
      expect(row.rows).to.have.length(1);
      await sleep(3000);
      await db.query('COMMIT');
      // The confirmation went through as the lock went: its lease is what the row holds once the session is open.
      let lease: number | null = null;
      let opened = false;
      let endedAt = 0;
      for (let i = 0; i < 600 && !endedAt; i++) {
        if (!opened && e.mx.open > 0) {
          opened = true;
          const r = await db.query('SELECT leased_until FROM deliveries WHERE id = $1', [row.rows[0].id]);
          lease = Number(r.rows[0].leased_until);
        } else if (opened && e.mx.open === 0) endedAt = Date.now();
        else await sleep(20);
      }
      expect(lease, 'the recipient was confirmed and its session opened').to.be.a('number');
      expect(endedAt, 'the session ended').to.be.above(0);
      expect(endedAt, `session ended at ${endedAt}, lease ended at ${lease}`).to.be.below(lease!);
      await e.waitStatus(sent.id, ['delivery_delayed'], 15_000);
    } finally {
      await db.end();
    }
  });
});
