// New mail due now goes straight to the delivery loop (services/delivery.ts Intake): leased in its own insert and
// handed over once its commit is durable, with no claim query. Mail scheduled for later, and a request rolled back,
// do not: the first is claimed when due, the second leaves nothing leased or reserved.
import { expect } from 'chai';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { createOutbound, type OutboundLoop } from '../../src/outbound/index.js';

describe('outbound delivery: new mail straight to the loop', function () {
  this.timeout(20000);
  let e: OutboundEnv;
  before(async function () {
    // Leases of 30 s (MTA_RETRY_MAX_SECONDS caps them), not 5: on a loaded box (the parallel test phase, load ~12) a
    // delivery and its result write outlasted 5 s, and the lease's end made its recipient due for a claim again,
    // which is the lease doing its job, not what this file is about. No poll during the tests (idlePollMs 60 s; the
    // timer still wakes at the next due time): the poll claims once a second whatever the stream does, so counting
    // claim queries against it measured how long the stream took.
    e = await outboundEnv({
      env: { MTA_RETRY_MAX_SECONDS: '30' },
      features: [(ctx) => ({ components: [createOutbound(ctx, { idlePollMs: 60_000 })] })],
    });
    // Until the loop's first claim has found the store empty, new mail is left to the claims (a fixed 100 ms was
    // not always enough on a loaded box: one email of five was claimed).
    const until = Date.now() + 10_000;
    while (!(loop() as any).claims.caughtUp && Date.now() < until) await sleep(5);
    expect((loop() as any).claims.caughtUp, 'the first claim found the store empty').to.equal(true);
  });
  after(() => e?.close());
  const loop = () => (e.s.svc as any).components.find((c: any) => c.name === 'outbound') as OutboundLoop;
  const row = (id: string) =>
    e.s.db
      .prepare(
        'SELECT d.leased_until, d.next_attempt_at FROM deliveries d JOIN emails m ON m.seq = d.email_seq WHERE m.id = ?',
      )
      .get(id) as { leased_until: number | null; next_attempt_at: number | null };

  it('an email due now is leased in its insert, delivered, and never claimed', async () => {
    const before = { ...loop().stats() };
    const sent = [];
    for (let i = 0; i < 5; i++) sent.push(await e.send({ to: `in${i}@rcpt.test` }));
    for (const m of sent) await e.waitStatus(m.id, ['delivered']);
    const after = loop().stats();
    expect(after.intake - before.intake, 'taken in from their insert').to.equal(5);
    expect(after.claimed - before.claimed, 'claimed').to.equal(0);
    for (let i = 0; i < 5; i++) expect(e.mx.to(`in${i}@rcpt.test`)).to.have.length(1);
    expect(row(sent[0].id), 'settled: no lease, not due').to.deep.equal({ leased_until: null, next_attempt_at: null });
    expect(after.reserved).to.equal(0);
  });

  it('a stream of new mail taken in costs no claim query (results written and new mail only look again)', async () => {
    const before = { ...loop().stats() };
    const sent = await Promise.all(Array.from({ length: 30 }, (_, i) => e.send({ to: `flow${i}@rcpt.test` })));
    for (const m of sent) await e.waitStatus(m.id, ['delivered']);
    const after = loop().stats();
    expect(after.intake - before.intake).to.equal(30);
    // Before: every `queued` event and every results write woke a claim (one per 5 ms at most). Now only the
    // loop's poll claims (none here: see before()).
    expect(after.claimQueries - before.claimQueries, 'claim queries').to.be.at.most(2);
    // Each one's result was written from what the loop knew of it (no read of the email and its recipients first).
    expect(after.knownResults - before.knownResults, 'results from what the loop knew').to.equal(30);
  });

  it("an email whose recipients' results come apart (two domains) is read before its results are written", async () => {
    const before = { ...loop().stats() };
    const m = await e.send({ to: ['one@rcpt.test', 'two@other.test'] });
    await e.waitStatus(m.id, ['delivered']);
    await sleep(200);
    expect(loop().stats().knownResults - before.knownResults).to.equal(0);
  });

  it('an email scheduled for later is stored unleased and claimed when due', async () => {
    const before = { ...loop().stats() };
    const m = await e.send({ to: 'later@rcpt.test', scheduled_at: new Date(Date.now() + 1500).toISOString() });
    expect(row(m.id).leased_until, 'not leased before it is due').to.equal(null);
    await e.waitStatus(m.id, ['delivered']);
    const after = loop().stats();
    expect(after.claimed - before.claimed).to.equal(1);
    expect(after.intake - before.intake).to.equal(0);
  });

  it('a request rolled back after its insert (402) leaves no reservation and nothing delivered', async () => {
    const month = new Date().toISOString().slice(0, 7);
    e.s.db
      .prepare(
        'INSERT INTO free_usage (team_id, month, used) VALUES (?, ?, ?) ON CONFLICT (team_id, month) DO UPDATE SET used = excluded.used',
      )
      .run(e.teamId, month, e.s.config.freeMonthlyCredits);
    const before = { ...loop().stats() };
    const r = await e.s.api('POST', '/v1/emails', {
      key: e.live,
      body: { from: 'app@sender.test', to: 'broke@rcpt.test', subject: 'x', text: 'x' },
    });
    expect(r.status).to.equal(402);
    expect(loop().stats().reserved).to.equal(0);
    // The loop still takes new mail in (a test email: no credits needed).
    const t = await e.send({ to: 'test@rcpt.test' }, e.test);
    await e.waitStatus(t.id, ['delivered'], 8000, e.test);
    const after = loop().stats();
    expect(after.intake - before.intake).to.equal(1);
    expect(e.mx.to('broke@rcpt.test')).to.have.length(0);
  });
});
