// The delivery scheduler end to end, with loopback MX servers and a test shaping file (small limits): two
// domains behind one site share its connections; a site's rate is held at the MX; a 421 4.7.28 suspends one
// site while another keeps delivering, then delivery resumes; a blocklist reply moves the site to another IP.
import { expect } from 'chai';
import type { SMTPServerSession } from 'smtp-server';
import { outboundEnv, route, sleep, type OutboundEnv } from './outbound-env.js';

describe('delivery scheduler: sites, limits and reactions', function () {
  this.timeout(30000);
  let e: OutboundEnv | undefined;
  afterEach(async () => {
    await e?.close();
    e = undefined;
  });

  /** Publishes `domain` → MX `mxHost` → 127.0.0.1 (the test MX). */
  const mxOf = (domain: string, mxHost: string) => {
    e!.dns.set(domain, { MX: [{ exchange: mxHost, priority: 10 }] });
    e!.dns.set(mxHost, { A: ['127.0.0.1'] });
  };

  it('two domains behind one site share its connection limit', async () => {
    let maxOpen = 0;
    e = await outboundEnv({
      shaping: { sites: { pair: { mx: ['*.pair.test'], connections: 2 } } },
      script: {
        data: () => {
          maxOpen = Math.max(maxOpen, e!.mx.open);
          return { delayMs: 150 };
        },
      },
    });
    mxOf('one.test', 'mx1.pair.test');
    mxOf('two.test', 'mx2.pair.test');
    const sent = await Promise.all(
      Array.from({ length: 12 }, (_, i) => e!.send({ to: `u${i}@${i % 2 ? 'one' : 'two'}.test` })),
    );
    for (const s of sent) await e.waitStatus(s.id, ['delivered'], 15000);
    expect(e.mx.messages).to.have.length(12);
    expect(maxOpen, 'sessions open at once at the MX').to.equal(2);
  });

  it("holds a site's rate (120/min: one message every 500 ms at the MX)", async () => {
    e = await outboundEnv({ shaping: { sites: { slow: { mx: ['mx.slow.test'], rate: '120/min' } } } });
    route(e.dns, 'slow.test');
    const t0 = Date.now();
    const sent = await Promise.all(Array.from({ length: 6 }, (_, i) => e!.send({ to: `s${i}@slow.test` })));
    for (const s of sent) await e.waitStatus(s.id, ['delivered'], 15000);
    // Counted at the MX against the time the emails were posted: the site's spacing lets the k-th message go no
    // sooner than k × 500 ms after the first, which went no sooner than t0, so the k-th to arrive cannot arrive
    // before t0 + k × 500 ms. A loaded box only delays arrivals (counting messages per second at the MX failed on
    // one: a first session late by a second let the next three arrive within 50 ms of it). Without shaping all six
    // arrive within tens of milliseconds of t0.
    const at = e.mx.messages.map((m) => m.at - t0).sort((a, b) => a - b);
    expect(at, 'six messages').to.have.length(6);
    for (const [k, ms] of at.entries())
      expect(ms, `message ${k} at the MX (${at} ms after posting)`).to.be.at.least(500 * k);
  });

  it('a 421 4.7.28 suspends that site for the IP while another site keeps delivering; delivery resumes after', async () => {
    const rcptAt: number[] = [];
    let refused = 0;
    e = await outboundEnv({
      env: { MTA_RETRY_MAX_SECONDS: '30' },
      shaping: {
        sites: { gsite: { mx: ['mx.gsite.test'] } },
        reactions: [{ match: '4\\.7\\.28', action: 'suspend', seconds: 4 }],
      },
      script: {
        rcpt: (to) => {
          if (!to.endsWith('@gsite.test')) return undefined;
          rcptAt.push(Date.now());
          return refused++ === 0
            ? { code: 421, message: '4.7.28 Our system has detected an unusual rate of unsolicited mail' }
            : undefined;
        },
      },
    });
    route(e.dns, 'gsite.test');
    const first = await e.send({ to: 'g0@gsite.test' });
    await e.waitStatus(first.id, ['delivery_delayed']);
    const delayed = (await e.events(first.id)).find((x: any) => x.type === 'delivery_delayed');
    expect(delayed.data.smtp_response, 'the reply of a server that hangs up after it').to.match(/4\.7\.28/);
    const g = await Promise.all(Array.from({ length: 4 }, (_, i) => e!.send({ to: `g${i + 1}@gsite.test` })));
    const other = await Promise.all(Array.from({ length: 10 }, (_, i) => e!.send({ to: `o${i}@rcpt.test` })));
    for (const o of other) await e.waitStatus(o.id, ['delivered'], 8000);
    // An order of events, not a time a loaded box can stretch: the other site's ten are delivered while the
    // suspended site has seen no attempt since its 421 (the suspension lasts 4 s; ten deliveries take well under
    // one on a quiet box).
    expect(rcptAt.length, 'the other site is not held by the suspension').to.equal(1);
    for (const m of [first, ...g]) await e.waitStatus(m.id, ['delivered'], 10000);
    expect(rcptAt.length, '421 once, then five accepted RCPTs').to.equal(6);
    for (const t of rcptAt.slice(1))
      expect(t - rcptAt[0], 'no attempt at the site while suspended').to.be.at.least(3900);
  });

  it('a blocklist reply moves the site to another IP of the pool; the message is not bounced', async () => {
    let blocked: string | null = null;
    const peers = new Map<string, string>();
    e = await outboundEnv({
      env: { MTA_SENDING_IPS: '127.0.0.2,127.0.0.3' },
      script: {
        connect: (session: SMTPServerSession) => {
          peers.set(session.id, session.remoteAddress);
          return undefined;
        },
        rcpt: (_to, session) => {
          blocked ??= session.remoteAddress;
          return session.remoteAddress === blocked
            ? { code: 550, message: '5.7.1 Service unavailable; client host blocked using Spamhaus' }
            : undefined;
        },
      },
    });
    const sent = await Promise.all(Array.from({ length: 4 }, (_, i) => e!.send({ to: `b${i}@rcpt.test` })));
    for (const s of sent) await e.waitStatus(s.id, ['delivered'], 8000);
    expect(blocked).to.be.oneOf(['127.0.0.2', '127.0.0.3']);
    const from = e.mx.messages.map((m) => peers.get(m.sessionId));
    expect(from).to.have.length(4);
    expect(new Set(from)).to.deep.equal(new Set([blocked === '127.0.0.2' ? '127.0.0.3' : '127.0.0.2']));
    // The control tick writes the lanes once a second.
    const lanesOf = () =>
      e!.s.db
        .prepare("SELECT ip, state, reason FROM delivery_lanes WHERE site = 'mx.rcpt.test' ORDER BY ip")
        .all() as any[];
    const until = Date.now() + 10_000;
    while (lanesOf().find((l) => l.ip === blocked)?.state !== 'suspended' && Date.now() < until) await sleep(50);
    const lanes = lanesOf();
    expect(lanes.find((l) => l.ip === blocked)).to.include({ state: 'suspended' });
    expect(lanes.find((l) => l.ip === blocked).reason).to.match(/Spamhaus/);
  });
});
