// PostgreSQL, two nodes on one database (issue 38 item 2): a node's delivery result that arrives after its lease
// ended and another node claimed the recipient records nothing (outbound/results.ts, services/transition.ts: each
// result is written only while the row still carries the lease token it was made under). Node A sends to an MX that
// holds the transaction in DATA; node B, its clock past A's lease (what A's lease looks like to the other nodes when
// A's send or its result write outlasts it: a stall, a paused process, a partition), claims the recipient and sends
// it too, its own transaction held in DATA. Then A's result arrives (a late deferral, or a late acceptance), then B's
// acceptance. The row, the events and the webhooks say B's outcome only, once. Without the check, A's late result was
// written over B's claim (status, reply, B's lease cleared; a delivery_delayed event and its webhook) and B's own
// outcome then lost or added to it (the first two cases fail so on main). The third case takes the other order (B's
// outcome recorded, then A's late deferral): the status check alone kept that row on main (the case fails there only
// on A's count of lost results); here A's result is lost.
// PostgreSQL only (MTA_TEST_ENGINE=pg); test/integration/outbound-claims.test.ts checks the same on both engines
// with the other node's claim made by hand.
import { expect } from 'chai';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { startTestService, testClock, testEngine, type TestService } from '../helpers/service.js';
import type { Step } from '../helpers/smtp-mx.js';
import { Receiver, verify } from './webhooks-receiver.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import type { OutboundLoop } from '../../src/outbound/index.js';
import { sql } from '../../src/store/db.js';
import { runSync } from '../../src/store/op.js';
import { deliveriesOf, emailByPublicId } from '../../src/store/emails.js';

// Both nodes: 20 s per SMTP command, leases of 30 s (outbound/index.ts timings: a transaction gets 24 s), so neither
// held transaction times out while the test moves on; B's clock runs a minute ahead while it claims.
const TIMINGS = { MTA_OUTBOUND_TIMEOUT_SECONDS: '20', MTA_RETRY_MAX_SECONDS: '30', MTA_QUEUE_LIFETIME_SECONDS: '3600' };
const SKEW_MS = 60_000;

const gate = () => {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { p, open };
};
const loopOf = (s: TestService) => (s.svc as any).components.find((c: any) => c.name === 'outbound') as OutboundLoop;

async function until(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  for (const end = Date.now() + ms; !cond(); await sleep(10))
    if (Date.now() > end) throw new Error(`not met in time: ${what}`);
}

describe('PostgreSQL: a late delivery result does not touch a recipient another node has claimed since', function () {
  this.timeout(90_000);
  let e: OutboundEnv | undefined;
  let b: TestService | undefined;
  let rx: Receiver | undefined;
  before(function () {
    if (testEngine() !== 'pg') this.skip(); // two nodes on one database: PostgreSQL
  });
  afterEach(async () => {
    await b?.close();
    await e?.close();
    await rx?.stop();
    b = e = rx = undefined;
  });

  /**
   * A's send held in DATA, B's claim and send held in DATA, then A's result (`aLate`) and B's acceptance, in `order`.
   */
  async function race(aLate: Step, order: 'a-first' | 'b-first' = 'a-first') {
    const aGate = gate();
    const bGate = gate();
    const aAtData = gate();
    const bAtData = gate();
    e = await outboundEnv({
      env: { ...TIMINGS, MTA_HOSTNAME: 'a.mta.test' },
      features: [outbound, webhooks],
      script: {
        data: (_rcpts, session) => {
          if (session.hostNameAppearsAs === 'a.mta.test') {
            aAtData.open();
            return { until: aGate.p, then: aLate };
          }
          bAtData.open();
          return { until: bGate.p, then: { ok: '2.0.0 taken from node b' } };
        },
      },
    });
    const env = e;
    rx = await new Receiver().start();
    const hooks = env.s.key(env.teamId, 'live', ['webhooks:write']);
    const events = ['sent', 'delivered', 'delivery_delayed', 'bounced', 'failed'];
    const ep = (await env.s.api('POST', '/v1/webhooks', { key: hooks, body: { url: rx.url, events } })).body;

    const m = await env.send({ to: 'late@rcpt.test' });
    await aAtData.p; // A holds the recipient under its lease, its transaction at DATA
    const seq = runSync(emailByPublicId(env.s.db, m.id))!.seq;
    const row = () => runSync(deliveriesOf(env.s.db, seq))[0] as any;
    const aLease = Number(row().leased_until);

    // Node B: the same database, DNS and MX. Its clock a minute ahead: A's lease (30 s) has ended for it.
    const clock = testClock();
    clock.advance(SKEW_MS);
    b = await startTestService({
      dataDir: env.s.config.dataDir,
      now: clock.now,
      features: [outbound, webhooks],
      env: {
        ...TIMINGS,
        MTA_HOSTNAME: 'b.mta.test',
        MTA_DNS_SERVERS: env.dns.server,
        MTA_OUTBOUND_PORT: String(env.mx.port),
        MTA_RETRY_MIN_SECONDS: '0.2',
        MTA_RATE_LIMIT: '0',
      },
    });
    const bLoop = loopOf(b);
    bLoop.wake();
    await bAtData.p; // B claimed the recipient, confirmed its lease and is sending it
    clock.advance(-SKEW_MS); // B's clock right again: nothing else of B's runs ahead
    const bLease = Number(row().leased_until);
    expect(bLease, "B's lease is not A's").to.not.equal(aLease);
    expect(bLoop.stats().claimed, 'B took the recipient by a claim').to.equal(1);

    const aLoop = loopOf(env.s);
    const aResult = async () => {
      aGate.open();
      await until(() => aLoop.stats().held === 0 && aLoop.stats().active === 0, "A's result handled");
    };
    const bResult = async () => {
      bGate.open();
      await env.waitStatus(m.id, ['delivered'], 20_000);
      await until(() => bLoop.stats().held === 0 && bLoop.stats().active === 0, "B's result handled");
    };
    if (order === 'a-first') {
      // A's result arrives while B's claim holds the row: it leaves the row to B.
      await aResult();
      const mid = row();
      expect(mid.status, "A's late result left the row to B's claim").to.equal('queued');
      expect(Number(mid.leased_until), "B's lease kept").to.equal(bLease);
      await bResult();
    } else {
      // B's outcome first, then A's result (the status check alone already kept this order's row; the lease check
      // makes it a lost result, not an outcome "ignored in this state").
      await bResult();
      await aResult();
    }

    // B's acceptance: recorded as B's, once.
    const done = row();
    expect(done).to.include({ status: 'delivered', attempts: 1 });
    expect(done.leased_until).to.equal(null);
    expect(done.last_reply).to.match(/taken from node b/);
    expect(bLoop.stats().lostResults).to.equal(0);
    expect(aLoop.stats().lostResults, "A's result counted as lost").to.equal(1);

    const evs = await env.events(m.id);
    expect(
      evs.map((ev: any) => ev.type),
      JSON.stringify(evs),
    ).to.deep.equal(['queued', 'sent', 'delivered']);
    const delivered = evs.find((ev: any) => ev.type === 'delivered');
    expect(delivered.data.smtp_response).to.match(/taken from node b/);

    // Webhooks: every outbox row of the endpoint sent (by either node), and they are B's outcome only.
    const outbox = () =>
      sql<{ event_type: string; status: string }>(
        env.s.db,
        'SELECT event_type, status FROM webhook_deliveries ORDER BY seq',
      ).all() as { event_type: string; status: string }[];
    await until(
      () => outbox().length > 0 && outbox().every((r) => r.status === 'succeeded') && rx!.got.length >= outbox().length,
      'webhooks sent',
    );
    expect(outbox().map((r) => r.event_type)).to.deep.equal(['sent', 'delivered']);
    const got = rx.got.map((r) => verify(ep.secret, r));
    expect(got.map((p) => p.type).sort()).to.deep.equal(['delivered', 'sent']);
    expect(got.find((p) => p.type === 'delivered').id).to.equal(delivered.id);
    return env;
  }

  it('a late deferral from the node whose lease ended records nothing; the other node’s delivery stands alone', async () => {
    const env = await race({ code: 451, message: '4.4.2 late deferral to node a' });
    // A's copy was refused (451) and B's taken: one copy at the MX, B's.
    expect(env.mx.to('late@rcpt.test').map((r) => r.helo)).to.deep.equal(['b.mta.test']);
  });

  it('a late acceptance from the node whose lease ended records nothing; the other node’s delivery stands alone', async () => {
    const env = await race({ ok: '2.0.0 taken from node a' });
    // Both copies reached the MX (A's send outlasted its lease: SMTP cannot take it back); the records are B's.
    expect(
      env.mx
        .to('late@rcpt.test')
        .map((r) => r.helo)
        .sort(),
    ).to.deep.equal(['a.mta.test', 'b.mta.test']);
  });

  it('a late deferral that arrives after the other node recorded its delivery records nothing either', async () => {
    const env = await race({ code: 451, message: '4.4.2 late deferral to node a' }, 'b-first');
    expect(env.mx.to('late@rcpt.test').map((r) => r.helo)).to.deep.equal(['b.mta.test']);
  });
});
