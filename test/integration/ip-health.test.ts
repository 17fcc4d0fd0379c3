// Sending-IP health through the real service (operations.md "Deliverability insight"): the loopback DNS plays the
// PTRs, the blocklist zone and SPF; `mta ips check` / `mta ips`, GET /admin/v1/ips, the Delivery page, and
// MTA_DNSBL_ACTION=suspend (delivery from a listed IP stops on every site, `mta sites` says why, a check after
// delisting resumes it). No query ever leaves 127.0.0.1.
import { expect } from 'chai';
import { TestDns } from '../helpers/dns.js';
import { mta } from '../helpers/cli.js';
import { FormClient } from '../helpers/form-client.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as operations } from '../../src/features/operations.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { outboundEnv, SENDER, type OutboundEnv } from './outbound-env.js';

const ADMIN = 'admin-token-0123456789';
const PASSWORD = 'correct horse battery';
const ZONE = 'bl.test';

/** 127.0.0.2: PTR + matching A, listed (127.0.0.2); 127.0.0.3: no PTR; 127.0.0.4: PTR, answer 127.255.255.254. */
function playZones(dns: TestDns): void {
  dns.set(TestDns.reverseName('127.0.0.2'), { PTR: ['mail2.sender.test'] });
  dns.set('mail2.sender.test', { A: ['127.0.0.2'] });
  dns.set(TestDns.reverseName('127.0.0.4'), { PTR: ['mail4.sender.test'] });
  dns.set('mail4.sender.test', { A: ['127.0.0.4'] });
  dns.set(`2.0.0.127.${ZONE}`, { A: ['127.0.0.2'] });
  dns.set(`4.0.0.127.${ZONE}`, { A: ['127.255.255.254'] });
  dns.patch(SENDER, { TXT: ['v=spf1 ip4:127.0.0.2 ip4:127.0.0.4 -all'] });
}

describe('sending-IP health', function () {
  this.timeout(30000);
  let e: OutboundEnv;
  afterEach(() => e?.close());

  const start = async (env: Record<string, string>) => {
    e = await outboundEnv({
      features: [outbound, operations, dashboard],
      env: {
        MTA_DNSBL_ZONES: ZONE,
        MTA_ADMIN_TOKEN: ADMIN,
        MTA_DASHBOARD_PASSWORD: PASSWORD,
        MTA_IP_CHECK_CRON: '0 0 1 1 *',
        ...env,
      },
    });
    playZones(e.dns);
  };
  const cliEnv = (extra: Record<string, string> = {}) => ({
    MTA_DATA_DIR: e.s.config.dataDir,
    MTA_DNS_SERVERS: e.dns.server,
    MTA_HOSTNAME: 'mta.test',
    MTA_SENDING_IPS: e.s.config.sendingIps.join(','),
    MTA_DNSBL_ZONES: ZONE,
    ...extra,
  });

  it('mta ips check reports reverse DNS, FCrDNS, listings and SPF; mta ips, the admin API and the dashboard read it', async () => {
    await start({ MTA_SENDING_IPS: '127.0.0.2,127.0.0.3,127.0.0.4' });
    const before = await mta(['ips'], cliEnv());
    expect(before.code, before.stderr).to.equal(0);
    expect(JSON.parse(before.stdout).map((x: any) => x.state)).to.deep.equal(['unchecked', 'unchecked', 'unchecked']);

    const r = await mta(['ips', 'check'], cliEnv());
    expect(r.code, r.stderr).to.equal(0);
    const ips = JSON.parse(r.stdout);
    const by = (ip: string) => ips.find((x: any) => x.ip === ip);
    expect(by('127.0.0.2')).to.deep.include({
      pool: 'default',
      reverse_dns: 'mail2.sender.test',
      fcrdns: true,
      listings: [{ zone: ZONE, listed: true, answer: '127.0.0.2' }],
      spf_missing: [],
      state: 'listed',
    });
    expect(by('127.0.0.3')).to.deep.include({
      reverse_dns: null,
      fcrdns: false,
      listings: [{ zone: ZONE, listed: false, answer: null }],
      spf_missing: [SENDER],
      state: 'warning',
    });
    expect(by('127.0.0.4')).to.deep.include({
      reverse_dns: 'mail4.sender.test',
      fcrdns: true,
      listings: [{ zone: ZONE, listed: false, answer: '127.255.255.254' }],
      spf_missing: [],
      state: 'ok',
    });
    expect(Date.parse(by('127.0.0.2').checked_at)).to.be.closeTo(Date.now(), 60_000);
    expect(e.dns.queries.every((q) => !q.name.endsWith('spamhaus.org'))).to.equal(true);

    // The last check is read back without checking again.
    const n = e.dns.queries.length;
    const again = await mta(['ips'], cliEnv());
    expect(JSON.parse(again.stdout)).to.deep.equal(ips);
    const api = await e.s.api('GET', '/admin/v1/ips', { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(api.status).to.equal(200);
    expect(api.body).to.deep.equal(ips);
    expect(e.dns.queries.length, 'no lookup on read').to.equal(n);
    expect((await e.s.api('GET', '/admin/v1/ips', { key: e.live })).status).to.equal(401);

    const c = new FormClient(e.s.url);
    const team = e.s.db.prepare('SELECT name FROM teams').pluck().get() as string;
    expect((await c.signInWith({ password: PASSWORD, team })).status).to.equal(303);
    const page = await c.req('GET', '/dashboard/delivery');
    expect(page.status).to.equal(200);
    expect(page.text).to.contain('id="ip-health"').and.contain('data-ip="127.0.0.2"').and.contain('mail2.sender.test');
    expect(page.text).to.contain('<code>bl.test</code> (127.0.0.2)').and.contain('(no FCrDNS)');
  });

  it('MTA_DNSBL_ACTION=suspend: a listed IP stops sending on every site until a check finds it delisted', async () => {
    await start({ MTA_SENDING_IPS: '127.0.0.2', MTA_DNSBL_ACTION: 'suspend' });
    const env = cliEnv({ MTA_DNSBL_ACTION: 'suspend' });
    const r = await mta(['ips', 'check'], env);
    expect(r.code, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout)[0]).to.include({ ip: '127.0.0.2', state: 'suspended' });

    await new Promise((res) => setTimeout(res, 1500)); // the loop applies holds once a second
    const sent = await e.send({ to: ['held@rcpt.test'] });
    await new Promise((res) => setTimeout(res, 2500));
    expect(e.mx.connections, 'nothing leaves the listed IP').to.equal(0);
    expect((await e.s.api('GET', `/v1/emails/${sent.id}`, { key: e.live })).body.status).to.not.equal('delivered');
    const sites = JSON.parse((await mta(['sites'], env)).stdout) as any[];
    expect(sites.length).to.be.greaterThan(0);
    for (const s of sites)
      expect(
        s.ips.find((x: any) => x.ip === '127.0.0.2'),
        s.site,
      ).to.include({
        state: 'suspended',
        reason: `dnsbl:${ZONE}`,
      });

    e.dns.delete(`2.0.0.127.${ZONE}`);
    const after = await mta(['ips', 'check'], env);
    expect(JSON.parse(after.stdout)[0]).to.include({ state: 'ok' });
    await e.waitStatus(sent.id, ['delivered'], 8000);
    const reopened = JSON.parse((await mta(['sites'], env)).stdout) as any[];
    for (const s of reopened) expect(s.ips.find((x: any) => x.ip === '127.0.0.2').reason).to.not.match(/^dnsbl:/);
  });
});
