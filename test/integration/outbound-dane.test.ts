// DANE (RFC 7672) on outbound mail, against loopback servers only: a CA made here, MXs with a good certificate
// chain (127.0.0.1: leaf for every mx.<n>.dane.test + the CA), one for another name (127.0.0.2, same CA) and one
// without STARTTLS (127.0.0.3), the test DNS server answering MX, A and TLSA with or without the AD bit (a validating
// resolver's "secure"), SERVFAIL or nothing at all. MTA_TLS_CA_FILE trusts the CA, so PKIX alone would accept the
// good MX: a wrong TLSA key deferring there shows DANE decided.
import { createHash, X509Certificate } from 'node:crypto';
import { expect } from 'chai';
import { TestCa } from '../helpers/test-ca.js';
import type { TestMx } from '../helpers/smtp-mx.js';
import type { TlsaRecord } from '../helpers/dns.js';
import { mta } from '../helpers/cli.js';
import { stsPolicy } from '../helpers/policy-server.js';
import { tlsEnv, type TlsEnv } from '../helpers/tls-env.js';
import { describeTlsPolicy } from '../../src/services/tls-policy.js';
import { outboundEnv, type OutboundEnv } from './outbound-env.js';

const dom = (n: string) => `${n}.dane.test`;
const mxOf = (n: string) => `mx.${dom(n)}`;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest();
const spki = (pem: string) => new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
const der = (pem: string) => new X509Certificate(pem).raw;
const tlsa = (usage: number, selector: number, matching: number, data: Buffer): TlsaRecord => ({
  usage,
  selector,
  matching,
  data,
});

/** Domains whose MX RRset is published secure: no message to them may ever arrive in plain text. */
const SECURE = ['ee', 'eecert', 'wrongkey', 'ta', 'taname', 'plain', 'servfail', 'stall', 'unusable', 'both'];
const DANE_DOMAINS = [...SECURE, 'twomx', 'override', 'cache'];

describe('outbound: DANE (RFC 7672)', function () {
  this.timeout(30000);
  let w: TlsEnv;
  let e: OutboundEnv;
  let wrongMx: TestMx;
  let plainMx: TestMx;
  let goodCert: string;
  let otherCert: string;

  /** `name` → MX mx.<name> → ip, every answer secure (AD) unless said, and the MX host's TLSA records. */
  function publish(n: string, ip: string, records: TlsaRecord[] | null, secure = { mx: true, a: true, tlsa: true }) {
    e.dns.set(dom(n), { MX: [{ exchange: mxOf(n), priority: 10 }], ad: secure.mx });
    e.dns.set(mxOf(n), { A: [ip], ad: secure.a });
    if (records) e.dns.set(`_25._tcp.${mxOf(n)}`, { TLSA: records, ad: secure.tlsa });
  }

  before(async () => {
    w = await tlsEnv({
      mxNames: [...DANE_DOMAINS, 'insecure', 'insecuretlsa'].map(mxOf),
      webNames: [`mta-sts.${dom('both')}`],
      env: { MTA_DANE: 'on' },
      chain: true,
    });
    ({ e, wrongMx, plainMx } = w);
    goodCert = w.good.cert;
    otherCert = w.other.cert;
    const goodEE = [tlsa(3, 1, 1, sha256(spki(goodCert)))];
    const wrongEE = [tlsa(3, 1, 1, sha256(spki(otherCert)))];
    const caTA = [tlsa(2, 0, 1, sha256(der(w.ca.caPem)))];
    publish('ee', '127.0.0.1', goodEE);
    publish('cache', '127.0.0.1', goodEE);
    publish('eecert', '127.0.0.1', [tlsa(3, 0, 2, createHash('sha512').update(der(goodCert)).digest())]);
    publish('wrongkey', '127.0.0.1', wrongEE);
    publish('override', '127.0.0.1', wrongEE);
    publish('ta', '127.0.0.1', caTA);
    publish('taname', '127.0.0.2', caTA);
    publish('plain', '127.0.0.3', goodEE);
    publish('servfail', '127.0.0.1', null);
    e.dns.set(`_25._tcp.${mxOf('servfail')}`, { servfail: true });
    publish('stall', '127.0.0.1', null);
    e.dns.set(`_25._tcp.${mxOf('stall')}`, { stall: true });
    // PKIX-EE(1) only: secure but unusable in SMTP, so TLS is required but not authenticated.
    publish('unusable', '127.0.0.1', [tlsa(1, 1, 1, sha256(spki(otherCert)))]);
    publish('insecure', '127.0.0.1', wrongEE, { mx: false, a: true, tlsa: true });
    publish('insecuretlsa', '127.0.0.1', wrongEE, { mx: true, a: true, tlsa: false });
    // both: an MTA-STS enforce policy AND TLSA records for an MX whose certificate names another host.
    publish('both', '127.0.0.2', [tlsa(3, 1, 1, sha256(spki(otherCert)))]);
    w.sts(dom('both'), stsPolicy('enforce', mxOf('both')));
    // twomx: the first MX's key does not match its TLSA record; the second's does.
    e.dns.set(dom('twomx'), {
      MX: [
        { exchange: `mx1.${dom('twomx')}`, priority: 10 },
        { exchange: `mx2.${dom('twomx')}`, priority: 20 },
      ],
      ad: true,
    });
    e.dns.set(`mx1.${dom('twomx')}`, { A: ['127.0.0.1'], ad: true });
    e.dns.set(`mx2.${dom('twomx')}`, { A: ['127.0.0.2'], ad: true });
    e.dns.set(`_25._tcp.mx1.${dom('twomx')}`, { TLSA: wrongEE, ad: true });
    e.dns.set(`_25._tcp.mx2.${dom('twomx')}`, { TLSA: wrongEE, ad: true });
  });
  after(async () => {
    // Never a message in plain text for a domain DANE applies to.
    for (const m of w.messages())
      if (DANE_DOMAINS.some((n) => m.to.some((t) => t.endsWith(`@${dom(n)}`))))
        expect(m.secure, m.to.join()).to.equal(true);
    expect(plainMx.messages.filter((m) => m.to.some((t) => t.endsWith('.dane.test')))).to.deep.equal([]);
    await w.close();
  });

  const eventOf = (id: string, type: string, ms?: number) => w.eventOf(id, type, ms);
  const send = async (n: string, local = 'user') => (await e.send({ to: `${local}@${dom(n)}` })).id as string;
  const received = (n: string, local = 'user') => w.messages().filter((m) => m.to.includes(`${local}@${dom(n)}`));

  it('DANE-EE 3 1 1 matching the MX key: delivered, tls.policy dane, verified', async () => {
    const ev = await eventOf(await send('ee'), 'delivered');
    expect(ev.data.tls).to.include({ policy: 'dane', verified: true });
    expect(ev.data.tls.version).to.match(/^TLSv1\.[23]$/);
    expect(ev.data.tls).to.not.have.property('failure');
    expect(received('ee').map((m) => m.secure)).to.deep.equal([true]);
  });

  it('DANE-EE 3 0 2 (whole certificate, SHA-512): delivered, verified', async () => {
    const ev = await eventOf(await send('eecert'), 'delivered');
    expect(ev.data.tls).to.include({ policy: 'dane', verified: true });
  });

  it('DANE-EE with another key: deferred 4.7.5 dane (tlsa-invalid), nothing sent, though PKIX would pass', async () => {
    const ev = await eventOf(await send('wrongkey'), 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'dane', enhanced_status: '4.7.5' });
    expect(ev.data.tls).to.include({ policy: 'dane', verified: false, result_type: 'tlsa-invalid' });
    expect(ev.data.tls.failure).to.match(/no TLSA record matches/);
    expect(e.mx.rcptCommands).to.not.include(`user@${dom('wrongkey')}`);
    expect(received('wrongkey')).to.deep.equal([]);
  });

  it('DANE-TA 2 0 1 with the test CA: delivered, verified (chain and name checked)', async () => {
    const ev = await eventOf(await send('ta'), 'delivered');
    expect(ev.data.tls).to.include({ policy: 'dane', verified: true });
    expect(received('ta')).to.have.length(1);
  });

  it('DANE-TA, certificate for another name: deferred dane (certificate-host-mismatch), nothing sent', async () => {
    const ev = await eventOf(await send('taname'), 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'dane', enhanced_status: '4.7.5' });
    expect(ev.data.tls).to.include({ policy: 'dane', result_type: 'certificate-host-mismatch' });
    expect(wrongMx.rcptCommands).to.not.include(`user@${dom('taname')}`);
  });

  it('MX without STARTTLS: deferred dane (starttls-not-supported), no plain-text delivery', async () => {
    const ev = await eventOf(await send('plain'), 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'dane', enhanced_status: '4.7.5' });
    expect(ev.data.tls).to.include({ policy: 'dane', verified: false, result_type: 'starttls-not-supported' });
    expect(plainMx.rcptCommands).to.deep.equal([]);
    expect(plainMx.messages).to.deep.equal([]);
  });

  it('SERVFAIL on the TLSA lookup of a secure MX: deferred (dnssec-invalid), no connection; delivered once it answers', async () => {
    const rcpt = `user@${dom('servfail')}`;
    const id = await send('servfail');
    const ev = await eventOf(id, 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'dane', enhanced_status: '4.7.5' });
    expect(ev.data.tls).to.include({ policy: 'dane', verified: false, result_type: 'dnssec-invalid' });
    expect(ev.data.smtp_response).to.match(/SERVFAIL/);
    expect(e.mx.rcptCommands).to.not.include(rcpt);
    e.dns.set(`_25._tcp.${mxOf('servfail')}`, { TLSA: [tlsa(3, 1, 1, sha256(spki(goodCert)))], ad: true });
    const done = await eventOf(id, 'delivered');
    expect(done.data.tls).to.include({ policy: 'dane', verified: true });
  });

  it('no answer at all to the TLSA lookup of a secure MX: deferred, never downgraded', async () => {
    const ev = await eventOf(await send('stall'), 'delivery_delayed');
    expect(ev.data).to.include({ reason: 'dane', enhanced_status: '4.7.5' });
    expect(ev.data.tls).to.include({ result_type: 'dnssec-invalid' });
    expect(received('stall')).to.deep.equal([]);
  });

  it('secure TLSA records, none usable (PKIX-EE only): TLS required, not authenticated', async () => {
    const ev = await eventOf(await send('unusable'), 'delivered');
    expect(ev.data.tls).to.include({ policy: 'dane', verified: false });
    expect(ev.data.tls.version).to.be.a('string');
    expect(received('unusable').map((m) => m.secure)).to.deep.equal([true]);
  });

  it('MX answer without AD (insecure): DANE does not apply, opportunistic as before despite a wrong TLSA key', async () => {
    const ev = await eventOf(await send('insecure'), 'delivered');
    expect(ev.data.tls).to.include({ policy: 'opportunistic' });
    const ev2 = await eventOf(await send('insecuretlsa'), 'delivered');
    expect(ev2.data.tls).to.include({ policy: 'opportunistic' });
  });

  it('DANE and MTA-STS both published: DANE wins (delivered to an MX whose name MTA-STS would refuse)', async () => {
    const ev = await eventOf(await send('both'), 'delivered');
    expect(ev.data.tls).to.include({ policy: 'dane', verified: true });
    expect(wrongMx.to(`user@${dom('both')}`)).to.have.length(1);
  });

  it('the first MX fails DANE: the next MX is tried and delivers', async () => {
    e.dns.set(`_25._tcp.mx2.${dom('twomx')}`, { TLSA: [tlsa(3, 1, 1, sha256(spki(otherCert)))], ad: true });
    e.dns.set(`_25._tcp.mx1.${dom('twomx')}`, { TLSA: [tlsa(3, 1, 1, sha256(Buffer.from('no such key')))], ad: true });
    const ev = await eventOf(await send('twomx'), 'delivered');
    expect(ev.data).to.include({ mx_host: `mx2.${dom('twomx')}` });
    expect(ev.data.tls).to.include({ policy: 'dane', verified: true });
    expect(e.mx.rcptCommands).to.not.include(`user@${dom('twomx')}`);
  });

  it('caches TLSA answers for their TTL: a second email to the domain costs no lookup', async () => {
    const tlsaQueries = () => e.dns.queries.filter((q) => q.name === `_25._tcp.${mxOf('cache')}`).length;
    await eventOf(await send('cache', 'a'), 'delivered');
    expect(tlsaQueries()).to.equal(1);
    await eventOf(await send('cache', 'b'), 'delivered');
    expect(tlsaQueries()).to.equal(1);
  });

  it('tls-policy says dane: true for a domain with usable secure TLSA records, false otherwise', async function () {
    this.timeout(90000); // two runs of the command line, slow on a loaded box
    // The service's own config (MTA_DANE=on, the loopback resolver): what `mta tls-policy` prints, without a process.
    expect(await describeTlsPolicy(e.s.ctx, dom('ee'))).to.include({ domain: dom('ee'), dane: true });
    expect(await describeTlsPolicy(e.s.ctx, dom('insecure'))).to.include({ dane: false });
    expect(await describeTlsPolicy(e.s.ctx, dom('insecuretlsa'))).to.include({ dane: false });
    expect(await describeTlsPolicy(e.s.ctx, dom('unusable'))).to.include({ dane: false });
    const show = async (n: string, env: Record<string, string>) => {
      const r = await mta(['tls-policy', dom(n)], { MTA_DATA_DIR: e.s.config.dataDir, ...env });
      expect(r.code, r.stderr).to.equal(0);
      return JSON.parse(r.stdout);
    };
    expect(await show('ee', { MTA_DANE: 'on', MTA_DNS_SERVERS: e.dns.server })).to.include({ dane: true });
    // MTA_DANE=off: false without a lookup (cli.dane.test is secure with usable records, and asked for by nothing else).
    publish('cli', '127.0.0.1', [tlsa(3, 1, 1, sha256(spki(goodCert)))]);
    expect(await show('cli', { MTA_DNS_SERVERS: e.dns.server })).to.include({ dane: false });
    expect(e.dns.queries.filter((q) => q.name.endsWith(dom('cli')))).to.deep.equal([]);
  });

  it('the operator override opportunistic wins over DANE', async function () {
    this.timeout(60000); // one run of the command line
    const d = dom('override');
    const id = await send('override');
    await eventOf(id, 'delivery_delayed');
    const set = await mta(['tls-policy', 'set', d, '--mode', 'opportunistic'], { MTA_DATA_DIR: e.s.config.dataDir });
    expect(set.code, set.stderr).to.equal(0);
    const ev = await eventOf(id, 'delivered');
    expect(ev.data.tls).to.include({ policy: 'opportunistic' });
  });
});

describe('outbound: MTA_DANE=off', function () {
  this.timeout(30000);

  it('ignores TLSA records: no TLSA lookup, delivered opportunistically to an MX whose key does not match', async () => {
    const ca = new TestCa();
    const good = ca.leaf([mxOf('off')]);
    const e = await outboundEnv({ mxCert: good });
    try {
      e.dns.set(dom('off'), { MX: [{ exchange: mxOf('off'), priority: 10 }], ad: true });
      e.dns.set(mxOf('off'), { A: ['127.0.0.1'], ad: true });
      e.dns.set(`_25._tcp.${mxOf('off')}`, { TLSA: [tlsa(3, 1, 1, sha256(Buffer.from('x')))], ad: true });
      const sent = await e.send({ to: `user@${dom('off')}` });
      await e.waitStatus(sent.id, ['delivered']);
      const ev = (await e.events(sent.id)).find((x: any) => x.type === 'delivered');
      expect(ev.data.tls).to.include({ policy: 'opportunistic' });
      expect(e.dns.queries.filter((q) => q.type === 'TLSA')).to.deep.equal([]);
    } finally {
      await e.close();
    }
  });
});
