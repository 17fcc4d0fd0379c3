import { expect } from 'chai';
import { outboundEnv, route, type OutboundEnv } from './outbound-env.js';
import { count } from '../helpers/factories.js';

const bounce = (code: number, message: string) => ({ code, message });

describe('outbound delivery: SMTP replies per recipient', function () {
  this.timeout(20000);
  let e: OutboundEnv | undefined;
  beforeEach(() => {
    e = undefined;
  });
  afterEach(() => e?.close());

  it('mixed recipients in one transaction: accepted, hard-bounced (suppressed), deferred then delivered', async () => {
    let tries = 0;
    e = await outboundEnv({
      script: {
        rcpt: (to) => {
          if (to.startsWith('gone@'))
            return bounce(550, '5.1.1 <gone@rcpt.test>: Recipient address rejected: User unknown');
          if (to.startsWith('later@') && tries++ === 0) return bounce(451, '4.7.1 Greylisted, try again later');
          return undefined;
        },
      },
    });
    const sent = await e.send({ to: ['ok@rcpt.test', 'gone@rcpt.test', 'later@rcpt.test'] });
    const done = await e.waitStatus(sent.id, ['bounced']);
    expect(done.status).to.equal('bounced');
    expect(e.mx.messages[0].to).to.deep.equal(['ok@rcpt.test']); // gone@ 550, later@ 451 at RCPT (each its own transaction)
    // Three transactions at once on their own sessions: their RCPTs reach the MX in any order.
    expect([...e.mx.rcptCommands.slice(0, 3)].sort()).to.deep.equal([
      'gone@rcpt.test',
      'later@rcpt.test',
      'ok@rcpt.test',
    ]);
    expect(e.mx.to('later@rcpt.test')).to.have.length(1); // delivered by the retry
    const ev = await e.events(sent.id);
    const of = (rcpt: string) => ev.filter((x) => x.recipient === rcpt).map((x) => x.type);
    expect(of('ok@rcpt.test')).to.deep.equal(['delivered']);
    expect(of('gone@rcpt.test')).to.deep.equal(['bounced']);
    expect(of('later@rcpt.test')).to.deep.equal(['delivery_delayed', 'delivered']);
    const gone = ev.find((x) => x.recipient === 'gone@rcpt.test').data;
    expect(gone).to.include({
      smtp_code: 550,
      enhanced_status: '5.1.1',
      reason: 'userunknown',
      hard: true,
      mx_host: 'mx.rcpt.test',
      provider: null, // neither the MX host nor the reply names a mailbox provider
    });
    const delayed = ev.find((x) => x.type === 'delivery_delayed').data;
    expect(delayed).to.include({ smtp_code: 451, enhanced_status: '4.7.1', attempt: 1, hard: false });
    expect(ev.filter((x) => x.recipient === 'later@rcpt.test')[1].data.attempt).to.equal(2);
    expect(count(e.s.db, 'suppressions', "address = 'gone@rcpt.test' AND reason = 'hard_bounce'")).to.equal(1);
    expect(count(e.s.db, 'suppressions')).to.equal(1);
  });

  it('a 5xx after DATA bounces every recipient, soft (not suppressed), classified from the reply', async () => {
    e = await outboundEnv({
      script: { data: () => bounce(554, '5.7.1 Message rejected as spam by Content Filtering - gsmtp') },
    });
    const sent = await e.send({ to: ['a@rcpt.test', 'b@rcpt.test'] });
    await e.waitStatus(sent.id, ['bounced']);
    const ev = (await e.events(sent.id)).filter((x) => x.type === 'bounced');
    expect(ev).to.have.length(2);
    // Gmail's sign in the reply ("gsmtp") names the provider, as on a DSN bounce.
    expect(ev[0].data).to.include({ smtp_code: 554, reason: 'spamdetected', hard: false, provider: 'google' });
    expect(count(e.s.db, 'suppressions')).to.equal(0);
  });

  it('a recipient refused at RCPT keeps its own reply when DATA then fails for the others', async () => {
    e = await outboundEnv({
      script: {
        rcpt: (to) =>
          to.startsWith('gone@')
            ? bounce(550, '5.1.1 <gone@rcpt.test>: Recipient address rejected: User unknown')
            : undefined,
        data: () => bounce(451, '4.3.0 Temporary failure, try later'),
      },
    });
    const sent = await e.send({ to: ['gone@rcpt.test', 'ok@rcpt.test'] });
    const deadline = Date.now() + 5000;
    let ev: any[] = [];
    while (Date.now() < deadline && !(ev = await e.events(sent.id)).some((x) => x.type === 'delivery_delayed'))
      await new Promise((r) => setTimeout(r, 50));
    const gone = ev.find((x) => x.recipient === 'gone@rcpt.test');
    expect(gone.type).to.equal('bounced');
    expect(gone.data).to.include({ smtp_code: 550, enhanced_status: '5.1.1', reason: 'userunknown', hard: true });
    expect(ev.find((x) => x.recipient === 'ok@rcpt.test')).to.include({ type: 'delivery_delayed' });
    expect(count(e.s.db, 'suppressions', "address = 'gone@rcpt.test' AND reason = 'hard_bounce'")).to.equal(1);
  });

  it('a 5xx to MAIL FROM bounces the recipient of the transaction', async () => {
    e = await outboundEnv({ script: { mail: () => bounce(553, '5.7.1 Sender address rejected: not owned by you') } });
    const sent = await e.send({ to: ['a@rcpt.test'] });
    await e.waitStatus(sent.id, ['bounced']);
    expect(e.mx.messages).to.have.length(0);
  });

  it('a 4xx to MAIL FROM defers the rest of the job without a MAIL FROM per recipient; all delivered on retry', async () => {
    const mails: string[] = [];
    e = await outboundEnv({
      shaping: { default: { connections: 1 } },
      script: {
        mail: (from) => (mails.push(from), mails.length === 1 ? bounce(421, '4.7.0 Try again later') : undefined),
      },
    });
    const sent = await e.send({ to: ['a@rcpt.test', 'b@rcpt.test', 'c@rcpt.test'] });
    await e.waitStatus(sent.id, ['delivered'], 10000);
    expect(e.mx.messages).to.have.length(3);
    // One MAIL FROM refused for the whole job, then one per recipient on the retry (a count, not a look at the status
    // between them: at load 4 the retry's MAIL FROM came before the test read delivery_delayed).
    expect(mails, 'MAIL FROMs: the refused one, then the retry').to.have.length(4);
    expect(new Set(mails.slice(1)).size, 'a VERP sender per recipient').to.equal(3);
    const delayed = (await e.events(sent.id)).filter((ev) => ev.type === 'delivery_delayed');
    // The job's recipients behind the refused one deferred with its reply (a recipient already in another job may
    // be delivered at once), none twice.
    expect(delayed.length, 'deferred recipients').to.be.at.least(1);
    expect(new Set(delayed.map((ev) => ev.recipient)).size).to.equal(delayed.length);
    for (const ev of delayed) expect(ev.data).to.include({ smtp_response: '421 4.7.0 Try again later' });
  });

  it('keeps deferring a 4xx until the queue lifetime ends: bounced with reason expired, not suppressed', async () => {
    e = await outboundEnv({
      env: { MTA_QUEUE_LIFETIME_SECONDS: '1' },
      script: { rcpt: () => bounce(450, '4.2.0 Mailbox busy') },
    });
    const sent = await e.send({ to: 'busy@rcpt.test' });
    await e.waitStatus(sent.id, ['bounced'], 10000);
    const ev = await e.events(sent.id);
    const delays = ev.filter((x) => x.type === 'delivery_delayed');
    expect(delays.length).to.be.greaterThan(0);
    const last = ev[ev.length - 1];
    expect(last.type).to.equal('bounced');
    expect(last.data).to.include({ reason: 'expired', hard: false, enhanced_status: '4.4.7' });
    expect(count(e.s.db, 'suppressions')).to.equal(0);
    expect(ev.map((x) => x.type).filter((t) => t !== 'delivery_delayed')).to.deep.equal(['queued', 'sent', 'bounced']);
  });

  it('null MX and NXDOMAIN are hard bounces without a connection; a domain with only an A record gets mail (implicit MX)', async () => {
    e = await outboundEnv();
    e.dns.set('nullmx.test', { MX: [{ exchange: '.', priority: 0 }] });
    e.dns.set('implicit.test', { A: ['127.0.0.1'] });
    const a = await e.send({ to: 'x@nullmx.test' });
    const b = await e.send({ to: 'x@nowhere.test' });
    const c = await e.send({ to: 'x@implicit.test' });
    await e.waitStatus(a.id, ['bounced']);
    await e.waitStatus(b.id, ['bounced']);
    await e.waitStatus(c.id, ['delivered']);
    const bounced = async (id: string) => (await e!.events(id)).find((x: any) => x.type === 'bounced').data;
    expect(await bounced(a.id)).to.include({ reason: 'notaccept', hard: true });
    expect(await bounced(b.id)).to.include({ reason: 'hostunknown', hard: true });
    expect(count(e.s.db, 'suppressions')).to.equal(2);
    expect(e.mx.connections).to.equal(1);
    expect(e.mx.to('x@implicit.test')).to.have.length(1);
  });

  it('DNS SERVFAIL or a time-out defers; the recipient is delivered once DNS answers', async () => {
    e = await outboundEnv({ env: { MTA_OUTBOUND_TIMEOUT_SECONDS: '1' } }); // DNS waits a third of it (333 ms), twice
    e.dns.set('flaky.test', { servfail: true });
    e.dns.set('slowdns.test', { stall: true });
    const a = await e.send({ to: 'x@flaky.test' });
    const b = await e.send({ to: 'x@slowdns.test' });
    await e.waitStatus(a.id, ['delivery_delayed']);
    await e.waitStatus(b.id, ['delivery_delayed']);
    route(e.dns, 'flaky.test');
    route(e.dns, 'slowdns.test');
    await e.waitStatus(a.id, ['delivered']);
    await e.waitStatus(b.id, ['delivered']);
    const d = (await e.events(a.id)).find((x) => x.type === 'delivery_delayed').data;
    expect(d).to.include({ reason: 'networkerror', hard: false });
  });

  it('tries the next MX when the preferred one refuses connections', async () => {
    e = await outboundEnv();
    e.dns.set('backup.test', {
      MX: [
        { exchange: 'dead.backup.test', priority: 5 },
        { exchange: 'mx.backup.test', priority: 20 },
      ],
    });
    e.dns.set('dead.backup.test', { A: ['127.0.0.9'] });
    e.dns.set('mx.backup.test', { A: ['127.0.0.1'] });
    const sent = await e.send({ to: 'x@backup.test' });
    await e.waitStatus(sent.id, ['delivered']);
    const d = (await e.events(sent.id)).find((x) => x.type === 'delivered' && x.recipient).data;
    expect(d).to.include({ mx_host: 'mx.backup.test', remote_ip: '127.0.0.1' });
  });
});
