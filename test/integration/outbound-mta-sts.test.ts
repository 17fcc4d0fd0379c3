// MTA-STS (RFC 8461) on outbound mail, against loopback servers only: a CA made here, an HTTPS policy server, MXs
// with a good certificate (127.0.0.1), a wrong-name one (127.0.0.2) and no STARTTLS (127.0.0.3), the test DNS server
// answering `_mta-sts` and the policy host. Policies are read through the store on every resolve (stsMemoMs 0).
import { expect } from 'chai';
import { TestCa } from '../helpers/test-ca.js';
import type { TestMx } from '../helpers/smtp-mx.js';
import { mta } from '../helpers/cli.js';
import { PolicyServer, stsPolicy as policy } from '../helpers/policy-server.js';
import { tlsEnv, type TlsEnv } from '../helpers/tls-env.js';
import { outboundEnv, route, sleep, type OutboundEnv } from './outbound-env.js';

const NAMES = ['good', 'wrong', 'plain', 'nomatch', 'testing', 'cache', 'override', 'expiry', 'shared'];
const dom = (n: string) => `${n}.sts.test`;
const IP: Record<string, string> = {
  wrong: '127.0.0.2',
  testing: '127.0.0.2',
  override: '127.0.0.2',
  plain: '127.0.0.3',
};

describe('outbound: MTA-STS (RFC 8461)', function () {
  this.timeout(30000);
  let w: TlsEnv;
  let e: OutboundEnv;
  let web: PolicyServer;
  let wrongMx: TestMx;
  let plainMx: TestMx;

  before(async () => {
    w = await tlsEnv({
      mxNames: NAMES.map((n) => `mx.${dom(n)}`),
      webNames: NAMES.map((n) => `mta-sts.${dom(n)}`),
    });
    ({ e, web, wrongMx, plainMx } = w);
    for (const n of NAMES) {
      route(e.dns, dom(n), IP[n] ?? '127.0.0.1');
      w.sts(dom(n), policy(n === 'testing' ? 'testing' : 'enforce', `mx.${dom(n)}`));
    }
    web.policies.set(dom('nomatch'), policy('enforce', '*.elsewhere.test'));
    web.policies.set(dom('expiry'), policy('enforce', `mx.${dom('expiry')}`, 1));
    // open.sts.test: no policy, and the same MX host as shared.sts.test (whose certificate names another host).
    e.dns.set(dom('shared'), { MX: [{ exchange: 'mx.pool.sts.test', priority: 10 }] });
    e.dns.set(dom('open'), { MX: [{ exchange: 'mx.pool.sts.test', priority: 10 }] });
    e.dns.set('mx.pool.sts.test', { A: ['127.0.0.2'] });
    web.policies.set(dom('shared'), policy('enforce', 'mx.pool.sts.test'));
  });
  after(async () => {
    // Never a message in plain text for a domain whose policy is enforced (the override test's `off` excepted).
    const enforced = NAMES.filter((n) => n !== 'testing' && n !== 'override').map(dom);
    for (const m of w.messages())
      if (enforced.some((d) => m.to.some((t) => t.endsWith(`@${d}`)))) expect(m.secure, m.to.join()).to.equal(true);
    await w.close();
  });

  const eventOf = (id: string, type: string, ms?: number) => w.eventOf(id, type, ms);
  const send = async (n: string, local = 'user') => (await e.send({ to: `${local}@${dom(n)}` })).id as string;

  it('enforce, MX with a good certificate: delivered over verified TLS', async () => {
    const id = await send('good');
    const ev = await eventOf(id, 'delivered');
    expect(ev.data.tls).to.include({ policy: 'mta-sts', verified: true });
    expect(ev.data.tls.version).to.match(/^TLSv1\.[23]$/);
    expect(ev.data.tls.cipher).to.be.a('string');
    expect(e.mx.to(`user@${dom('good')}`).map((m) => m.secure)).to.deep.equal([true]);
  });

  it('enforce, certificate for another name: deferred 4.7.5 mta_sts, nothing sent', async () => {
    const id = await send('wrong');
    const ev = await eventOf(id, 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'mta_sts', enhanced_status: '4.7.5' });
    expect(ev.data.smtp_response).to.match(/not valid for mx\.wrong\.sts\.test/);
    expect(ev.data.tls).to.include({ policy: 'mta-sts', verified: false });
    expect(wrongMx.rcptCommands).to.deep.equal([]);
    expect(wrongMx.messages).to.deep.equal([]);
  });

  it('enforce, MX without STARTTLS: deferred mta_sts, no plain-text delivery', async () => {
    const id = await send('plain');
    const ev = await eventOf(id, 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'mta_sts', enhanced_status: '4.7.5' });
    expect(plainMx.rcptCommands).to.deep.equal([]);
    expect(plainMx.messages).to.deep.equal([]);
  });

  it('enforce, no MX host matches the policy: deferred mta_sts without a connection', async () => {
    const before = e.mx.connections;
    const id = await send('nomatch');
    const ev = await eventOf(id, 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'mta_sts', enhanced_status: '4.7.5' });
    expect(ev.data.smtp_response).to.match(/matches its policy/);
    expect(e.mx.to(`user@${dom('nomatch')}`)).to.deep.equal([]);
    expect(e.mx.connections).to.equal(before);
  });

  it('testing, certificate for another name: delivered as before, the failure recorded', async () => {
    const id = await send('testing');
    const ev = await eventOf(id, 'delivered');
    expect(ev.data.tls).to.include({ policy: 'mta-sts', verified: false });
    expect(ev.data.tls.failure).to.match(/not valid for mx\.testing\.sts\.test/);
    expect(wrongMx.to(`user@${dom('testing')}`)).to.have.length(1);
  });

  it('caches the policy in the store: no fetch while the id holds, a new id refetches, a failed refetch keeps it', async () => {
    const d = dom('cache');
    await eventOf(await send('cache', 'a'), 'delivered');
    expect(web.hits.get(d)).to.equal(1);
    await eventOf(await send('cache', 'b'), 'delivered');
    expect(web.hits.get(d)).to.equal(1);
    e.dns.set(`_mta-sts.${d}`, { TXT: ['v=STSv1; id=2'] });
    web.policies.set(d, policy('enforce', `*.${d}`));
    await eventOf(await send('cache', 'c'), 'delivered');
    expect(web.hits.get(d)).to.equal(2);
    const shown = await mta(['tls-policy', d], { MTA_DATA_DIR: e.s.config.dataDir });
    expect(shown.code, shown.stderr).to.equal(0);
    expect(JSON.parse(shown.stdout)).to.deep.include({ domain: d, dane: false, override: null });
    expect(JSON.parse(shown.stdout).mta_sts).to.include({ mode: 'enforce', id: '2', max_age: 86400 });
    expect(JSON.parse(shown.stdout).mta_sts.mx).to.deep.equal([`*.${d}`]);
    // The refetch fails: the cached policy (id 2) still applies.
    e.dns.set(`_mta-sts.${d}`, { TXT: ['v=STSv1; id=3'] });
    web.failing = true;
    try {
      const ev = await eventOf(await send('cache', 'd'), 'delivered');
      expect(web.hits.get(d)).to.equal(3);
      expect(ev.data.tls).to.include({ policy: 'mta-sts', verified: true });
      const again = JSON.parse((await mta(['tls-policy', d], { MTA_DATA_DIR: e.s.config.dataDir })).stdout);
      expect(again.mta_sts.id).to.equal('2');
    } finally {
      web.failing = false;
    }
  });

  it('refetches a policy whose max_age ran out, the id unchanged', async () => {
    const d = dom('expiry');
    await eventOf(await send('expiry', 'a'), 'delivered');
    await eventOf(await send('expiry', 'b'), 'delivered');
    expect(web.hits.get(d)).to.equal(1);
    await sleep(1100);
    await eventOf(await send('expiry', 'c'), 'delivered');
    expect(web.hits.get(d)).to.equal(2);
  });

  it('an enforced send never rides on a pooled session that is not verified (same MX host, other domain)', async () => {
    const open = await send('open');
    expect((await eventOf(open, 'delivered')).data.tls).to.include({ policy: 'opportunistic', verified: false });
    const connections = wrongMx.connections;
    const id = await send('shared');
    expect((await eventOf(id, 'delivery_delayed')).data).to.include({ reason: 'mta_sts', enhanced_status: '4.7.5' });
    expect(wrongMx.to(`user@${dom('shared')}`)).to.deep.equal([]);
    expect(wrongMx.connections).to.be.greaterThan(connections);
  });

  it('the operator override `off` delivers despite an enforce policy; clear restores it', async () => {
    const d = dom('override');
    const env = { MTA_DATA_DIR: e.s.config.dataDir };
    const id = await send('override');
    await eventOf(id, 'delivery_delayed');
    expect(wrongMx.to(`user@${d}`)).to.deep.equal([]);
    const set = await mta(['tls-policy', 'set', d, '--mode', 'off'], env);
    expect(set.code, set.stderr).to.equal(0);
    expect(JSON.parse(set.stdout)).to.include({ domain: d, override: 'off' });
    const ev = await eventOf(id, 'delivered');
    expect(ev.data.tls).to.include({ policy: 'none', verified: false });
    expect(wrongMx.to(`user@${d}`)).to.have.length(1);
    const bad = await mta(['tls-policy', 'set', d, '--mode', 'sometimes'], env);
    expect(bad.code).to.equal(2);
    expect((await mta(['tls-policy', 'set', '--mode', 'off'], env)).code).to.equal(2);
    const notDomain = await mta(['tls-policy', 'not a domain'], env);
    expect(notDomain.code).to.equal(1);
    expect(notDomain.stderr).to.match(/not a domain name/);
    const cleared = await mta(['tls-policy', 'clear', d], env);
    expect(JSON.parse(cleared.stdout)).to.include({ override: null });
    const again = await send('override', 'second');
    expect((await eventOf(again, 'delivery_delayed')).data).to.include({ reason: 'mta_sts' });
  });
});

describe('outbound: MTA_MTA_STS=off', function () {
  this.timeout(30000);

  it('ignores published policies: no fetch, delivered opportunistically to an MX whose certificate is not trusted', async () => {
    const ca = new TestCa();
    const web = await new PolicyServer().start(ca.leaf([`mta-sts.${dom('off')}`]));
    const e = await outboundEnv({
      env: { MTA_MTA_STS: 'off', MTA_TLS_CA_FILE: ca.caFile, MTA_STS_HTTPS_PORT: String(web.port) },
    });
    try {
      route(e.dns, dom('off'));
      e.dns.set(`_mta-sts.${dom('off')}`, { TXT: ['v=STSv1; id=1'] });
      e.dns.set(`mta-sts.${dom('off')}`, { A: ['127.0.0.1'] });
      web.policies.set(dom('off'), policy('enforce', `mx.${dom('off')}`));
      const sent = await e.send({ to: `user@${dom('off')}` });
      const done = await e.waitStatus(sent.id, ['delivered']);
      expect(done.status).to.equal('delivered');
      const ev = (await e.events(sent.id)).find((x: any) => x.type === 'delivered');
      expect(ev.data.tls).to.include({ policy: 'opportunistic', verified: false });
      expect(web.hits.size).to.equal(0);
    } finally {
      await e.close();
      await web.stop();
    }
  });
});
