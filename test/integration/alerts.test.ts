// Domain and IP alerts as events (decisions.md "Domain and IP alerts") through the real service: the sending-IP
// check against the loopback DNS (a listing, a delisting, an IP without FCrDNS), DMARC aggregate reports sent to the
// inbound listener, and the domain re-check after a DKIM record disappears. Each event reaches the operator's
// MTA_ALERT_WEBHOOK_URL and the live team endpoints subscribed to it (a receiver on 127.0.0.1 verifies the Standard
// Webhooks signatures), once per subject per 7 days (the service's clock is moved on).
import { expect } from 'chai';
import { startTestService, testClock, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { publish } from '../helpers/domains.js';
import { aggregateReport as report, reporterKey, signedBy } from '../helpers/dmarc-report.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { feature as inbound } from '../../src/features/inbound.js';
import { feature as domains } from '../../src/features/domains.js';
import { checkIps } from '../../src/services/ip-health.js';
import { checkAllDomains } from '../../src/services/domain-checks.js';
import { newSecret } from '../../src/core/webhook-signing.js';
import { Webhook } from 'standardwebhooks';
import { Receiver, sleep, type Received } from './webhooks-receiver.js';
import { assertWebhookDescribed, webhookContract } from '../helpers/contract.js';
import { smtpPort, smtpSend } from './inbound-fixtures.js';

const ZONE = 'bl.test';
const DAY = 86_400_000;
const OP_SECRET = newSecret();

describe('domain and IP alerts', function () {
  this.timeout(60_000);
  const clock = testClock();
  let s: TestService;
  let dns: TestDns;
  let op: Receiver;
  let rxA: Receiver;
  let rxB: Receiver;
  let rxTest: Receiver;
  const secrets = new Map<Receiver, string>();
  let keyA: string;
  let domain: any;

  /**
   * The events a receiver got, in arrival order, each with its signature checked (Standard Webhooks; by hand, as the
   * library's check would refuse the timestamps of the service's moved clock).
   */
  const events = (rx: Receiver) =>
    rx.got.map((r: Received) => {
      const wh = new Webhook(rx === op ? OP_SECRET : secrets.get(rx)!);
      const at = new Date(Number(r.headers['webhook-timestamp']) * 1000);
      expect(r.headers['webhook-signature'].split(' ')).to.include(wh.sign(r.headers['webhook-id'], at, r.body));
      expect(r.json.id).to.equal(r.headers['webhook-id']);
      assertWebhookDescribed(webhookContract(), r.json); // as the document's `webhooks` describes it
      return r.json;
    });
  const alerts = (rx: Receiver) => events(rx).map((e: any) => `${e.type} ${e.data.alert}`);
  /** Waits for the dispatcher and the alert sender (both poll every second) to post what is due. */
  const settle = () => sleep(2500);

  before(async () => {
    dns = await new TestDns().start();
    dns.set(TestDns.reverseName('127.0.0.2'), { PTR: ['mail2.mta.test'] });
    dns.set('mail2.mta.test', { A: ['127.0.0.2'] });
    dns.set(TestDns.reverseName('127.0.0.5'), { PTR: ['mail5.mta.test'] });
    dns.set('mail5.mta.test', { A: ['127.0.0.5'] });
    dns.set(`2.0.0.127.${ZONE}`, { A: ['127.0.0.2'] });
    op = await new Receiver().start();
    s = await startTestService({
      features: [webhooks, inbound, domains],
      now: clock.now,
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_SENDING_IPS: '127.0.0.2',
        MTA_IP_POOLS: 'beta=127.0.0.5',
        MTA_DNSBL_ZONES: ZONE,
        MTA_ALLOW_PRIVATE_WEBHOOKS: '1',
        MTA_ALERT_WEBHOOK_URL: op.url,
        MTA_ALERT_WEBHOOK_SECRET: OP_SECRET,
        MTA_DNS_CHECK_CRON: '0 0 1 1 *',
        MTA_RATE_LIMIT: '0',
      },
    });
    const alpha = s.team('alpha').id;
    const beta = s.team('beta').id;
    keyA = s.key(alpha, 'live', ['domains:read', 'domains:write', 'webhooks:write']);
    const subscribe = async (key: string, events: string[]) => {
      const rx = await new Receiver().start();
      const ep = await s.api('POST', '/v1/webhooks', { key, body: { url: rx.url, events } });
      expect(ep.status, JSON.stringify(ep.body)).to.equal(201);
      secrets.set(rx, ep.body.secret);
      return rx;
    };
    rxA = await subscribe(keyA, ['ip.alert', 'domain.alert']);
    rxB = await subscribe(s.key(beta, 'live', ['webhooks:write']), ['ip.alert', 'domain.alert']);
    rxTest = await subscribe(s.key(alpha, 'test', ['webhooks:write']), ['ip.alert', 'domain.alert']);
    domain = (await s.api('POST', '/v1/domains', { key: keyA, body: { name: 'example.test' } })).body;
    publish(dns, domain);
    const v = await s.api('POST', `/v1/domains/${domain.id}/verify`, { key: keyA });
    expect(v.body.status).to.equal('verified');
  });
  after(async () => {
    await s?.close();
    for (const rx of [op, rxA, rxB, rxTest]) await rx?.stop();
    await dns?.stop();
  });

  it('an endpoint subscribes to ip.alert and domain.alert; an unknown kind is refused', async () => {
    const bad = await s.api('POST', '/v1/webhooks', { key: keyA, body: { url: op.url, events: ['ip.alarm'] } });
    expect(bad.status).to.equal(422);
    expect(bad.body.error.message).to.contain('ip.alert').and.contain('domain.alert');
  });

  it('IP listed → ip.alert listed to the operator and the pool’s team; again within 7 days → nothing; delisted', async () => {
    await checkIps(s.ctx);
    await settle();
    expect(alerts(op)).to.deep.equal(['ip.alert listed']);
    const [ev] = events(op);
    expect(ev).to.deep.include({ object: 'event', type: 'ip.alert' });
    expect(ev.id).to.match(/^evt_/);
    expect(Date.parse(ev.created_at)).to.be.closeTo(clock.now(), 60_000);
    expect(ev.data).to.deep.equal({
      alert: 'listed',
      ip: { ip: '127.0.0.2', pool: 'default' },
      details: { zone: ZONE, answer: '127.0.0.2' },
    });
    expect(events(rxA).map((e: any) => e.id)).to.deep.equal([ev.id], 'alpha sends from the default pool');
    expect(alerts(rxB), 'beta sends from 127.0.0.5 only').to.deep.equal([]);
    expect(alerts(rxTest), 'alerts are live events').to.deep.equal([]);

    clock.advance(3 * DAY);
    await checkIps(s.ctx);
    await settle();
    expect(alerts(op), 'still listed, within 7 days').to.deep.equal(['ip.alert listed']);

    dns.delete(`2.0.0.127.${ZONE}`);
    await checkIps(s.ctx);
    await settle();
    expect(alerts(op)).to.deep.equal(['ip.alert listed', 'ip.alert delisted']);
    expect(events(op)[1].data).to.deep.equal({
      alert: 'delisted',
      ip: { ip: '127.0.0.2', pool: 'default' },
      details: { zone: ZONE },
    });
    expect(alerts(rxA)).to.deep.equal(['ip.alert listed', 'ip.alert delisted']);
  });

  it('an IP without FCrDNS → ip.alert no_fcrdns to the operator and the team whose pool holds it', async () => {
    dns.delete('mail5.mta.test');
    const n = op.got.length;
    await checkIps(s.ctx);
    await settle();
    expect(alerts(op).slice(n)).to.deep.equal(['ip.alert no_fcrdns']);
    expect(events(op)[n].data).to.deep.equal({
      alert: 'no_fcrdns',
      ip: { ip: '127.0.0.5', pool: 'beta' },
      details: { reverse_dns: 'mail5.mta.test' },
    });
    expect(alerts(rxB)).to.deep.equal(['ip.alert no_fcrdns']);
    expect(alerts(rxA)).to.not.include('ip.alert no_fcrdns');
  });

  it('a DMARC report with a foreign failing source (≥ 10 messages) → dmarc_failing_source once per 7 days', async () => {
    const google = reporterKey(dns, 'google.com');
    const send = async (id: string, rows: any[]) => {
      const msg = await signedBy(google, report('google.com', id, 'example.test', clock.now() - DAY, rows));
      const r = await smtpSend(smtpPort(s), { from: 'r@reports.example', to: ['dmarc@bounces.mta.test'] }, msg);
      expect(r.response, r.response).to.match(/^250 2\.0\.0 DMARC report dmr_/);
    };
    const n = op.got.length;
    const a = rxA.got.length;
    await send('r1', [
      { ip: '127.0.0.2', count: 40 },
      { ip: '203.0.113.5', count: 9, dkim: 'fail', spf: 'fail' },
      { ip: '203.0.113.5', count: 3, dkim: 'fail', spf: 'fail' },
      { ip: '198.51.100.7', count: 9, dkim: 'fail', spf: 'fail' },
    ]);
    await settle();
    expect(alerts(op).slice(n)).to.deep.equal(['domain.alert dmarc_failing_source']);
    const ev = events(op)[n];
    expect(ev.data.domain).to.deep.equal({ id: domain.id, name: 'example.test' });
    expect(ev.data.details).to.deep.include({ source_ip: '203.0.113.5', messages: 12 });
    expect(ev.data.details.report).to.include({
      org_name: 'google.com',
      report_id: 'r1',
      authenticated_by: 'dkim:google.com',
    });
    expect(
      events(rxA)
        .slice(a)
        .map((e: any) => e.id),
    ).to.deep.equal([ev.id]);
    expect(alerts(rxB), 'another team’s domain').to.not.include('domain.alert dmarc_failing_source');

    clock.advance(2 * DAY);
    await send('r2', [{ ip: '203.0.113.5', count: 50, dkim: 'fail', spf: 'fail' }]);
    await settle();
    expect(alerts(op).slice(n), 'the same source within 7 days').to.deep.equal(['domain.alert dmarc_failing_source']);

    clock.advance(6 * DAY);
    await send('r3', [{ ip: '203.0.113.5', count: 50, dkim: 'fail', spf: 'fail' }]);
    await settle();
    expect(alerts(op).slice(n), 'after 7 days').to.deep.equal([
      'domain.alert dmarc_failing_source',
      'domain.alert dmarc_failing_source',
    ]);
  });

  it('a DMARC report nobody aligned with its reporter vouches for is stored and raises no alert', async () => {
    const n = op.got.length;
    const rows = [{ ip: '192.0.2.66', count: 500, dkim: 'fail' as const, spf: 'fail' as const }];
    const mk = (id: string) => report('google.com', id, 'example.test', clock.now() - DAY, rows);
    // unsigned; signed by a domain that is not the reporter's; signed by the reporter, then altered
    const other = reporterKey(dns, 'reports.example');
    const google = reporterKey(dns, 'google.com');
    const sent = [
      mk('f1'),
      await signedBy(other, mk('f2')),
      (await signedBy(google, mk('f3'))).replace('Subject: ', 'Subject: Fwd: '),
    ];
    for (const msg of sent) {
      const r = await smtpSend(smtpPort(s), { from: 'r@reports.example', to: ['dmarc@bounces.mta.test'] }, msg);
      expect(r.response, r.response).to.match(/^250 2\.0\.0 DMARC report dmr_/);
    }
    await settle();
    expect(alerts(op).slice(n)).to.deep.equal([]);
    const list = await s.api('GET', `/v1/domains/${domain.id}/dmarc/reports`, { key: keyA });
    const forgedOnes = list.body.data.filter((r: any) => ['f1', 'f2', 'f3'].includes(r.report_id));
    expect(forgedOnes.map((r: any) => [r.report_id, r.authenticated, r.authenticated_by])).to.have.deep.members([
      ['f1', false, null],
      ['f2', false, null],
      ['f3', false, null],
    ]);
  });

  it('a report signed by its reporter replaces a forged one sent first with its org and id; not the reverse', async () => {
    const n = op.got.length;
    const rows = [{ ip: '192.0.2.77', count: 30, dkim: 'fail' as const, spf: 'fail' as const }];
    const raw = report('google.com', 'g1', 'example.test', clock.now() - DAY, rows);
    const send = async (msg: string) => {
      const r = await smtpSend(smtpPort(s), { from: 'r@reports.example', to: ['dmarc@bounces.mta.test'] }, msg);
      return r.response.match(/dmr_\w+/)?.[0];
    };
    const forged = await send(raw);
    const genuine = await send(await signedBy(reporterKey(dns, 'google.com'), raw));
    const again = await send(raw);
    await settle();
    expect(genuine).to.be.a('string').and.not.equal(forged);
    expect(again, 'a forged copy after the genuine one').to.equal(genuine);
    const list = await s.api('GET', `/v1/domains/${domain.id}/dmarc/reports`, { key: keyA });
    const g1 = list.body.data.filter((r: any) => r.report_id === 'g1');
    expect(g1.map((r: any) => [r.id, r.authenticated, r.authenticated_by])).to.deep.equal([
      [genuine, true, 'dkim:google.com'],
    ]);
    expect(alerts(op).slice(n)).to.deep.equal(['domain.alert dmarc_failing_source']);
    expect(events(op)[n].data.details).to.deep.include({ source_ip: '192.0.2.77', messages: 30 });
  });

  it('one of our IPs failing DKIM and SPF alignment → dmarc_own_failing', async () => {
    const n = op.got.length;
    const rows = [{ ip: '127.0.0.2', count: 2, dkim: 'fail' as const, spf: 'fail' as const }];
    const raw = report('Yahoo', 'y1', 'example.test', clock.now() - DAY, rows, 'dmarchelp@yahoo.com');
    const msg = await signedBy(reporterKey(dns, 'yahoo.com'), raw);
    await smtpSend(smtpPort(s), { from: 'r@reports.example', to: ['dmarc@bounces.mta.test'] }, msg);
    await settle();
    expect(alerts(op).slice(n)).to.deep.equal(['domain.alert dmarc_own_failing']);
    expect(events(op)[n].data.details).to.deep.include({ source_ip: '127.0.0.2', messages: 2 });
  });

  it('a verified domain whose DKIM record disappears → dns_record_broken', async () => {
    const n = op.got.length;
    const dkim = domain.records.find((r: any) => r.purpose === 'dkim');
    dns.delete(dkim.name);
    await checkAllDomains(s.ctx);
    await settle();
    expect(alerts(op).slice(n)).to.deep.equal(['domain.alert dns_record_broken']);
    const ev = events(op)[n];
    expect(ev.data.domain).to.deep.equal({ id: domain.id, name: 'example.test' });
    expect(ev.data.details).to.include({ record: 'dkim' });
    expect(alerts(rxA)).to.include('domain.alert dns_record_broken');

    await checkAllDomains(s.ctx);
    await settle();
    expect(op.got.length, 'still broken: no second alert').to.equal(n + 1);
  });
});
