// A purge of 10,000 deferred recipients through the admin API of a running service: all end `failed` with
// reason `purged`, credits are refunded, webhooks go out, and POST /v1/emails keeps answering meanwhile (the
// purge runs in batches of 200, one transaction each). Then: a purge or hold with no filter is refused.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { Receiver } from './webhooks-receiver.js';
import { feature as operations } from '../../src/features/operations.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { applyOutcomesPlan } from '../../src/services/transition.js';
import { tx } from '../../src/store/db.js';
import { runSync } from '../../src/store/op.js';

const TOKEN = 'admin-token-for-tests-0123456789';
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1];

describe('queue purge', function () {
  // PostgreSQL with the credit lock's holders on the pool (the default since session 20): each batch is written
  // set-wise since session 21 (services/queue.ts; it waited for each write before, ~100 s at load 1). The webhook
  // dispatcher sends the 10,000 webhooks meanwhile, each claim a round trip on the synchronous connection.
  this.timeout(300_000);
  let s: TestService;
  let rx: Receiver;
  before(async () => {
    rx = await new Receiver().start();
    // No delivery loop: the recipients stay as this test puts them.
    s = await startTestService({
      features: [operations, webhooks],
      env: { MTA_ADMIN_TOKEN: TOKEN, MTA_RATE_LIMIT: '0' },
    });
  });
  after(async () => {
    await s.close();
    await rx.stop();
  });
  const admin = (p: string, body?: unknown) =>
    s.api('POST', `/admin/v1${p}`, { body, headers: { authorization: `Bearer ${TOKEN}` } });

  it('ends 10,000 deferred recipients failed/purged, refunds credits, sends webhooks, while the API answers', async () => {
    const team = s.team();
    s.credits(team.id, 20_000);
    const key = s.key(team.id, 'live', ['emails:send', 'emails:read', 'webhooks:write']);
    insertVerifiedDomain(s.db, team.id, 'sender.test');
    const hook = await s.api('POST', '/v1/webhooks', { key, body: { url: rx.url, events: ['failed'] } });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    const balance = async () => (await s.api('GET', '/v1/credits', { key })).body.available as number;
    const before = await balance();
    const to = Array.from({ length: 50 }, (_, i) => `u${i}@slow.test`);
    const one = {
      from: 'app@sender.test',
      to,
      subject: 's',
      text: 't',
      scheduled_at: new Date(Date.now() + 3600e3).toISOString(),
    };
    for (let b = 0; b < 2; b++) {
      const r = await s.api('POST', '/v1/emails/batch', { key, body: Array.from({ length: 100 }, () => one) });
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).to.equal(202);
    }
    // Each recipient deferred once by the real transition writer, its retry an hour away.
    const seqs = s.db.prepare('SELECT seq FROM emails WHERE team_id = ?').pluck().all(team.id) as number[];
    const later = Date.now() + 3600e3;
    tx(s.db, () => {
      for (const seq of seqs) {
        const ids = s.db.prepare('SELECT id FROM deliveries WHERE email_seq = ?').pluck().all(seq) as number[];
        const data = {
          attempt: 1,
          smtp_code: 451,
          smtp_response: '4.7.1 Try again later',
          reason: 'blocked',
          hard: false,
        };
        runSync(
          applyOutcomesPlan(
            s.ctx,
            seq,
            ids.map((deliveryId) => ({ deliveryId, event: 'deferred' as const, data, nextAttemptAt: later })),
          ),
        );
      }
    });
    expect(await balance(), '10,000 recipients charged').to.equal(before - 10_000);

    const base: number[] = [];
    const send = async (into: number[]) => {
      const t = performance.now();
      const r = await s.api('POST', '/v1/emails', { key, body: { ...one, to: ['x@other.test'] } });
      into.push(performance.now() - t);
      expect(r.status).to.equal(202);
    };
    for (let i = 0; i < 30; i++) await send(base);
    const during: number[] = [];
    let done = false;
    const t0 = performance.now();
    const purge = admin('/queue/purge', { domain: 'slow.test', reason: 'cleanup' }).finally(() => (done = true));
    let took = 0;
    void purge.then(() => (took = performance.now() - t0));
    // Awaited below; should a send fail first, the purge's own failure (the service closed) is not an unhandled
    // rejection that kills the test process (a mocha --parallel worker) with every other test of its file.
    purge.catch(() => {});
    while (!done) await send(during);
    const r = await purge;
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.deep.equal({ matched: 10_000 });
    console.log(
      `      POST /v1/emails p99: ${p99(base).toFixed(1)} ms before, ${p99(during).toFixed(1)} ms during the purge (${during.length} requests); the purge took ${(took / 1000).toFixed(1)} s`,
    );
    expect(during.length, 'requests answered during the purge').to.be.greaterThan(5);
    expect(p99(during), 'p99 during the purge').to.be.lessThan(Math.max(500, p99(base) * 4));

    const states = s.db
      .prepare("SELECT status, reason, count(*) AS n FROM deliveries WHERE domain = 'slow.test' GROUP BY 1, 2")
      .all();
    expect(states).to.deep.equal([{ status: 'failed', reason: 'purged', n: 10_000 }]);
    const emails = s.db
      .prepare(
        'SELECT status, count(*) AS n FROM emails WHERE seq IN (SELECT CAST(value AS BIGINT) FROM json_each(?)) GROUP BY 1',
      )
      .all(JSON.stringify(seqs));
    expect(emails, 'delivery_delayed → failed, the operator edge').to.deep.equal([{ status: 'failed', n: 200 }]);
    expect(await balance(), 'credits refunded (only the probe emails stay charged)').to.equal(
      before - 30 - during.length,
    );
    const rows = s.db
      .prepare("SELECT data_json FROM events WHERE email_seq = ? AND type = 'failed' AND recipient IS NOT NULL")
      .pluck()
      .all(seqs[0]) as string[];
    expect(rows, 'one failed event per recipient').to.have.length(50);
    expect(JSON.parse(rows[0])).to.deep.equal({
      action: 'purge',
      source: 'operator',
      reason: 'purged',
      message: 'cleanup',
    });
    const outbox = s.db.prepare("SELECT count(*) FROM webhook_deliveries WHERE event_type = 'failed'").pluck().get();
    expect(outbox, 'one webhook per failed event').to.equal(10_000);
    await rx.waitFor(20);
    expect(rx.got[0].json).to.deep.include({ type: 'failed' });
    expect(rx.got[0].json.data.details).to.include({ action: 'purge', reason: 'purged' });
  });

  it('refuses a hold or purge with no filter unless all is given', async () => {
    for (const a of ['hold', 'purge']) {
      const r = await admin(`/queue/${a}`, {});
      expect(r.status).to.equal(422);
      expect(r.body.error.code).to.equal('queue_filter_required');
    }
    expect((await admin('/queue/release', {})).body).to.have.property('matched');
    expect((await admin('/queue/hold', { all: true })).status).to.equal(200);
  });
});
