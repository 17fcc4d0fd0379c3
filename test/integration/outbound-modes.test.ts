import { expect } from 'chai';
import { openTestDb } from '../helpers/service.js';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { count } from '../helpers/factories.js';

describe('outbound delivery: test mode, scheduling, cancel, sessions', function () {
  this.timeout(20000);
  let e: OutboundEnv | undefined;
  beforeEach(() => {
    e = undefined;
  });
  afterEach(() => e?.close());

  it('test keys walk the live statuses by simulation, never opening a connection or touching suppressions', async () => {
    e = await outboundEnv();
    const ids: Record<string, string> = {};
    for (const local of ['delivered', 'bounced', 'complained', 'delayed', 'someone']) {
      ids[local] = (await e.send({ to: `${local}@rcpt.test` }, e.test)).id;
    }
    const want: Record<string, string> = {
      delivered: 'delivered',
      bounced: 'bounced',
      complained: 'complained',
      delayed: 'delivered',
      someone: 'delivered',
    };
    // Deadlines only (was: all within 3 s, which the parallel test phase's load can stretch): delayed@'s simulated
    // retry is 1 s away (outbound/simulate.ts); what each email went through is asserted below.
    for (const [local, status] of Object.entries(want)) await e.waitStatus(ids[local], [status], 15_000, e.test);
    const types = async (local: string) => (await e!.events(ids[local], e!.test)).map((x: any) => x.type);
    expect(await types('delivered')).to.deep.equal(['queued', 'sent', 'delivered']);
    expect(await types('complained')).to.deep.equal(['queued', 'sent', 'delivered', 'complained']);
    expect(await types('delayed')).to.deep.equal(['queued', 'sent', 'delivery_delayed', 'delivered']);
    const bounced = (await e.events(ids.bounced, e.test)).find((x: any) => x.type === 'bounced');
    expect(bounced.data).to.include({
      source: 'simulated',
      reason: 'userunknown',
      hard: true,
      enhanced_status: '5.1.1',
    });
    expect(e.mx.connections).to.equal(0);
    expect(count(e.s.db, 'suppressions')).to.equal(0);
    expect(count(e.s.db, 'credit_ledger')).to.equal(0);
  });

  it('a scheduled email waits for scheduled_at; one canceled before then is never sent', async () => {
    e = await outboundEnv();
    const at = new Date(Date.now() + 1200).toISOString();
    const keep = await e.send({ to: 'keep@rcpt.test', scheduled_at: at });
    const drop = await e.send({ to: 'drop@rcpt.test', scheduled_at: at });
    await sleep(300);
    expect((await e.s.api('GET', `/v1/emails/${keep.id}`, { key: e.live })).body.status).to.equal('queued');
    const c = await e.s.api('POST', `/v1/emails/${drop.id}/cancel`, { key: e.live });
    expect(c.status).to.equal(200);
    expect(c.body.status).to.equal('canceled');
    await e.waitStatus(keep.id, ['delivered'], 5000);
    expect(e.mx.to('keep@rcpt.test')[0].at).to.be.at.least(Date.parse(at));
    await sleep(300);
    expect(e.mx.to('drop@rcpt.test')).to.have.length(0);
    expect((await e.s.api('GET', `/v1/emails/${drop.id}`, { key: e.live })).body.status).to.equal('canceled');
  });

  it('cancel is refused (422 email_not_cancelable) once a delivery is claimed, and the email is delivered', async () => {
    e = await outboundEnv({ script: { data: () => ({ delayMs: 500 }) } });
    const sent = await e.send({ to: 'x@rcpt.test' });
    const until = Date.now() + 3000;
    while (e.mx.open === 0 && Date.now() < until) await sleep(5);
    const c = await e.s.api('POST', `/v1/emails/${sent.id}/cancel`, { key: e.live });
    expect(c.status).to.equal(422);
    expect(c.body.error.code).to.equal('email_not_cancelable');
    await e.waitStatus(sent.id, ['delivered']);
    expect(e.mx.messages).to.have.length(1);
  });

  it('reuses a session for several messages (up to outboundMessagesPerConnection), RSET after a failed one', async () => {
    let n = 0;
    e = await outboundEnv({
      overrides: { outboundMessagesPerConnection: 4 },
      shaping: { default: { connections: 1 } },
      script: { mail: () => (n++ === 1 ? { code: 451, message: '4.3.0 Temporary failure' } : undefined) },
    });
    const sent = await Promise.all(Array.from({ length: 8 }, (_, i) => e!.send({ to: `u${i}@rcpt.test` })));
    for (const s of sent) await e.waitStatus(s.id, ['delivered']);
    expect(e.mx.messages).to.have.length(8);
    expect(e.mx.connections).to.be.within(2, 4); // 9 transactions, 4 per session
    expect(new Set(e.mx.messages.map((m) => m.sessionId)).size).to.be.lessThan(8);
  });

  it('a sender domain that lost verification makes the email failed and refunds its credits', async () => {
    e = await outboundEnv();
    const sent = await e.send({
      to: ['a@rcpt.test', 'b@other.test'],
      scheduled_at: new Date(Date.now() + 400).toISOString(),
    });
    expect(sent.credits_charged).to.equal(2);
    e.s.db.prepare("UPDATE domains SET status = 'failed'").run();
    const done = await e.waitStatus(sent.id, ['failed'], 5000);
    expect(done.credits_charged).to.equal(0);
    const failed = (await e.events(sent.id)).filter((x: any) => x.type === 'failed' && x.recipient);
    expect(failed).to.have.length(2);
    expect(failed[0].data.error).to.equal('domain_not_verified');
    expect(e.mx.connections).to.equal(0);
  });
});

describe('outbound delivery: stop (SIGTERM)', function () {
  this.timeout(20000);
  it('finishes the transaction in flight and releases claims not yet started', async () => {
    const e = await outboundEnv({
      shaping: { default: { connections: 1 } },
      script: { data: () => ({ delayMs: 400 }) },
    });
    const sent = await Promise.all([0, 1, 2].map((i) => e.send({ to: `u${i}@rcpt.test` })));
    const until = Date.now() + 3000;
    while (e.mx.open === 0 && Date.now() < until) await sleep(5);
    await e.s.close();
    expect(e.mx.messages).to.have.length(1);
    const db = await openTestDb(e.s.config.dataDir);
    const rows = db.prepare('SELECT status, leased_until, next_attempt_at FROM deliveries ORDER BY id').all() as any[];
    db.close();
    expect(rows.map((r) => r.status).sort()).to.deep.equal(['delivered', 'queued', 'queued']);
    for (const r of rows.filter((x) => x.status === 'queued')) {
      expect(r.leased_until).to.equal(null);
      expect(r.next_attempt_at).to.be.at.most(Date.now());
    }
    expect(sent).to.have.length(3);
    await e.mx.stop();
    await e.dns.stop();
  });
});
