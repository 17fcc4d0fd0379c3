// Per-team source IP pools on loopback (127/8 is all held by `lo`): team "acme" sends from its pool
// 127.0.0.2, other teams from MTA_SENDING_IPS 127.0.0.3; sessions never cross pools; SPF lists the pool.
import { expect } from 'chai';
import type { SMTPServerSession } from 'smtp-server';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { startTestService, tempDir, type TestService } from '../helpers/service.js';
import { mta } from '../helpers/cli.js';
import { TestDns } from '../helpers/dns.js';
import { publish } from '../helpers/domains.js';
import { feature as domains } from '../../src/features/domains.js';
import { outboundEnv, type OutboundEnv } from './outbound-env.js';

describe('outbound: per-team source IP pools', function () {
  this.timeout(20000);
  let e: OutboundEnv;
  let acmeKey: string;
  /** The client address the test MX saw, per SMTP session. */
  const peers = new Map<string, string>();
  const peerOf = (to: string) => e.mx.to(to).map((m) => peers.get(m.sessionId));

  beforeEach(async () => {
    peers.clear();
    e = await outboundEnv({ env: { MTA_SENDING_IPS: '127.0.0.3', MTA_IP_POOLS: 'acme=127.0.0.2' } });
    e.mx.script.connect = (session: SMTPServerSession) => {
      peers.set(session.id, session.remoteAddress);
      return undefined;
    };
    const acme = e.s.team('acme');
    insertVerifiedDomain(e.s.db, acme.id, 'acme.test');
    acmeKey = e.s.key(acme.id, 'live', ['emails:send', 'emails:read']);
  });
  afterEach(() => e.close());

  const sendAcme = (to: string) => e.send({ from: 'App <app@acme.test>', to: [to] }, acmeKey);

  it("binds each team's pool, never reuses a session across pools, and records source_ip", async () => {
    const a1 = await sendAcme('a1@rcpt.test');
    await e.waitStatus(a1.id, ['delivered'], 8000, acmeKey);
    const b1 = await e.send({ to: ['b1@rcpt.test'] });
    await e.waitStatus(b1.id, ['delivered']);
    const a2 = await sendAcme('a2@rcpt.test');
    const b2 = await e.send({ to: ['b2@rcpt.test'] });
    await e.waitStatus(a2.id, ['delivered'], 8000, acmeKey);
    await e.waitStatus(b2.id, ['delivered']);

    expect([...peerOf('a1@rcpt.test'), ...peerOf('a2@rcpt.test')]).to.deep.equal(['127.0.0.2', '127.0.0.2']);
    expect([...peerOf('b1@rcpt.test'), ...peerOf('b2@rcpt.test')]).to.deep.equal(['127.0.0.3', '127.0.0.3']);
    const session = (to: string) => e.mx.to(to)[0].sessionId;
    // Sessions are still reused within a pool (keyed by source address, not disabled)…
    expect(session('a2@rcpt.test')).to.equal(session('a1@rcpt.test'));
    expect(session('b2@rcpt.test')).to.equal(session('b1@rcpt.test'));
    // …but never across pools.
    expect(session('a1@rcpt.test')).not.to.equal(session('b1@rcpt.test'));

    const delivered = async (id: string, key?: string) =>
      (await e.events(id, key)).find((x) => x.type === 'delivered').data;
    expect(await delivered(a1.id, acmeKey)).to.include({ source_ip: '127.0.0.2', remote_ip: '127.0.0.1' });
    expect(await delivered(b2.id)).to.include({ source_ip: '127.0.0.3', remote_ip: '127.0.0.1' });
  });

  it("never sends a pool team's mail from another address family: the MX address is skipped and the mail deferred", async () => {
    await e.close();
    e = await outboundEnv({
      env: {
        MTA_SENDING_IPS: '127.0.0.3',
        MTA_IP_POOLS: 'v6only=::1',
        MTA_RETRY_MIN_SECONDS: '30',
        MTA_RETRY_MAX_SECONDS: '60',
      },
    });
    const team = e.s.team('v6only');
    insertVerifiedDomain(e.s.db, team.id, 'six.test');
    const key = e.s.key(team.id, 'live', ['emails:send', 'emails:read']);
    const sent = await e.send({ from: 'app@six.test', to: ['x@rcpt.test'] }, key);
    await e.waitStatus(sent.id, ['delivery_delayed'], 8000, key);
    const deferred = (await e.events(sent.id, key)).find((x) => x.type === 'delivery_delayed');
    expect(deferred.data.smtp_response).to.match(/IP pool has no IPv4 address for mx\.rcpt\.test/);
    expect(e.mx.connections).to.equal(0);
  });
});

describe('sending domains: SPF of a team with its own IP pool', function () {
  this.timeout(20000);
  let dns: TestDns;
  let s: TestService;
  before(async () => {
    dns = await new TestDns().start();
    s = await startTestService({
      features: [domains],
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_SENDING_IPS: '127.0.0.3',
        MTA_IP_POOLS: 'acme=127.0.0.2|::1',
        MTA_DNS_CHECK_CRON: '0 0 1 1 *',
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.3',
      },
    });
  });
  after(async () => {
    await s.close();
    await dns.stop();
  });

  const addDomain = async (teamName: string, name: string) => {
    const key = s.key(s.team(teamName).id, 'live', ['domains:read', 'domains:write']);
    const d = (await s.api('POST', '/v1/domains', { key, body: { name } })).body;
    return {
      key,
      d,
      spf: (r: any[]) => r.filter((x: any) => x.type === 'TXT' && (x.purpose === 'spf' || x.purpose === 'return_path')),
    };
  };

  it('publishes and checks the pool for the apex and the return path; other teams keep the default IPs', async () => {
    const acme = await addDomain('acme', 'acme.test');
    expect(acme.spf(acme.d.records).map((r: any) => [r.name, r.value])).to.deep.equal([
      ['acme.test', 'v=spf1 ip4:127.0.0.2 ip6:::1 ~all'],
      ['bounces.acme.test', 'v=spf1 ip4:127.0.0.2 ip6:::1 ~all'],
    ]);
    const other = await addDomain('other', 'other.test');
    expect(other.spf(other.d.records).map((r: any) => r.value)).to.deep.equal([
      'v=spf1 ip4:127.0.0.3 ~all',
      'v=spf1 ip4:127.0.0.3 ~all',
    ]);

    // The default record does not authorise acme's pool: the check fails on it…
    dns.set('acme.test', { TXT: ['v=spf1 ip4:127.0.0.3 ~all'] });
    const wrong = (await s.api('POST', `/v1/domains/${acme.d.id}/verify`, { key: acme.key })).body;
    const spfWrong = wrong.records.find((r: any) => r.purpose === 'spf');
    expect(spfWrong.status).to.equal('failed');
    expect(spfWrong.error).to.match(/127\.0\.0\.2/);
    // …and the published records verify the domain.
    dns.set('acme.test', {});
    publish(dns, acme.d);
    const ok = (await s.api('POST', `/v1/domains/${acme.d.id}/verify`, { key: acme.key })).body;
    expect(ok.status).to.equal('verified');
    expect(ok.records.filter((r: any) => r.type === 'TXT').every((r: any) => r.status === 'verified')).to.equal(true);
  });
});

describe('mta serve with a bad MTA_IP_POOLS', function () {
  this.timeout(30000);
  it('refuses to start, naming the variable', async () => {
    const r = await mta(['serve'], { MTA_DATA_DIR: tempDir(), MTA_IP_POOLS: 'acme=192.0.2.0/24' });
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.match(/ipPools \(MTA_IP_POOLS\)/);
  });
});
