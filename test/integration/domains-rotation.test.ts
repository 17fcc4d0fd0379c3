// DKIM key rotation and Ed25519 dual signing end to end: the real HTTP API, TestDns on loopback, the
// outbound loop delivering to a loopback MX, and mailauth verifying the delivered signatures.
import { expect } from 'chai';
import { dkimVerify } from 'mailauth';
import { startTestService, testClock, type TestClock, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { publish, publishRecord } from '../helpers/domains.js';
import { route } from './outbound-env.js';
import { feature as domains } from '../../src/features/domains.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { signingKeyFor } from '../../src/services/sending-domain.js';
import { runSync } from '../../src/store/op.js';
import { onDomainStatusChange, type DomainStatusChange } from '../../src/services/domain-checks.js';
import { createResolver } from '../../src/services/resolver.js';

const DAY = 24 * 3600 * 1000;

describe('sending domains: DKIM rotation and Ed25519', function () {
  this.timeout(40_000);
  let dns: TestDns;
  let mx: TestMx;
  let s: TestService;
  let clock: TestClock;
  let team: { id: string };
  let key: string;
  const changes: DomainStatusChange[] = [];

  before(async () => {
    dns = await new TestDns().start();
    mx = await new TestMx().start();
    clock = testClock();
    s = await startTestService({
      features: [domains, outbound],
      now: clock.now,
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_SENDING_IPS: '192.0.2.10',
        MTA_DNS_CHECK_CRON: '*/1 * * * * *',
        MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.3',
        MTA_OUTBOUND_PORT: String(mx.port),
        MTA_OUTBOUND_TIMEOUT_SECONDS: '1',
        MTA_RETRY_MIN_SECONDS: '0.2',
        MTA_RATE_LIMIT: '0',
      },
    });
    onDomainStatusChange(s.db, (_db, c) => changes.push(c));
    route(dns, 'rcpt.test');
    team = s.team();
    key = s.key(team.id, 'live', ['domains:read', 'domains:write', 'emails:send', 'emails:read']);
    s.credits(team.id, 100);
  });
  after(async () => {
    await s.close();
    await mx.stop();
    await dns.stop();
  });

  /** Sends a live email from the domain and answers the message the MX received. */
  async function deliver(from: string): Promise<Buffer> {
    const seen = mx.messages.length;
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from, to: 'alice@rcpt.test', subject: 'Hello', text: 'Hi there' },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    const until = Date.now() + 8000;
    while (mx.messages.length === seen && Date.now() < until) await new Promise((res) => setTimeout(res, 20));
    expect(mx.messages.length, 'message delivered').to.equal(seen + 1);
    return mx.messages[seen].raw;
  }

  async function verifyDkim(raw: Buffer) {
    const r = createResolver({ dnsServers: [dns.server] });
    return (await dkimVerify(raw, { resolver: (name: string, type: string) => r.resolve(name, type as 'TXT') as any }))
      .results;
  }

  const selectors = (raw: Buffer) =>
    [...raw.toString().matchAll(/^DKIM-Signature:[^]*?\bs=([^;\s]+)/gim)].map((m) => m[1]);

  async function addVerified(name: string, body: Record<string, unknown> = {}) {
    const add = await s.api('POST', '/v1/domains', { key, body: { name, ...body } });
    expect(add.status, JSON.stringify(add.body)).to.equal(201);
    publish(dns, { records: add.body.records.slice(0, 5) });
    const v = await s.api('POST', `/v1/domains/${add.body.id}/verify`, { key });
    expect(v.body.status).to.equal('verified');
    return v.body;
  }

  it('rotate → next record listed, signing stays on the old key until the new record verifies, then switches; old key retires after 7 days', async () => {
    const d = await addVerified('rot.test');
    const oldSel = d.records[0].name.split('.')[0];
    expect(d.records[0]).to.include({ state: 'current', algorithm: 'rsa', signing: true, status: 'verified' });
    expect(selectors(await deliver('app@rot.test'))).to.deep.equal([oldSel]);

    const rot = await s.api('POST', `/v1/domains/${d.id}/rotate-dkim`, { key });
    expect(rot.status, JSON.stringify(rot.body)).to.equal(200);
    expect(rot.body.status).to.equal('verified');
    expect(rot.body.records.map((r: any) => r.purpose)).to.deep.equal([
      'dkim',
      'spf',
      'dmarc',
      'return_path',
      'return_path',
      'dkim',
      'dmarc_report_auth',
    ]);
    const next = rot.body.records[5];
    expect(next).to.include({ type: 'TXT', state: 'next', algorithm: 'rsa', signing: false, status: 'pending' });
    const newSel = next.name.split('.')[0];
    expect(newSel)
      .to.match(/^mta\d{8}[0-9a-f]{4}$/)
      .and.not.equal(oldSel);
    expect(next.value).to.match(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
    expect(rot.body.records[0]).to.include({ name: d.records[0].name, state: 'current', signing: true });
    expect(JSON.stringify(rot.body)).not.to.match(/PRIVATE/);
    const again = await s.api('POST', `/v1/domains/${d.id}/rotate-dkim`, { key });
    expect(again.status).to.equal(422);
    expect(again.body.error.code).to.equal('dkim_rotation_in_progress');

    // Next record not published yet: the domain stays verified and keeps signing with the old key.
    const v1 = await s.api('POST', `/v1/domains/${d.id}/verify`, { key });
    expect(v1.body.status).to.equal('verified');
    expect(v1.body.records[5]).to.include({ state: 'next', status: 'failed' });
    expect(v1.body.records[5].error).to.match(/No TXT record/);
    expect(runSync(signingKeyFor(s.ctx, team.id, 'rot.test'))!.selector).to.equal(oldSel);
    const oldSigned = await deliver('app@rot.test');
    expect(selectors(oldSigned)).to.deep.equal([oldSel]);

    publishRecord(dns, next);
    const v2 = await s.api('POST', `/v1/domains/${d.id}/verify`, { key });
    expect(v2.body.status).to.equal('verified');
    expect(v2.body.records[0]).to.include({
      name: next.name,
      value: next.value,
      state: 'current',
      status: 'verified',
      signing: true,
    });
    const retiring = v2.body.records[5];
    expect(retiring).to.include({ name: d.records[0].name, state: 'retiring', signing: false, status: 'verified' });
    expect(Date.parse(retiring.retire_at) - clock.now()).to.be.within(7 * DAY - 60_000, 7 * DAY);
    expect(runSync(signingKeyFor(s.ctx, team.id, 'rot.test'))!.selector).to.equal(newSel);

    const newSigned = await deliver('app@rot.test');
    expect(selectors(newSigned)).to.deep.equal([newSel]);
    for (const [raw, sel] of [
      [newSigned, newSel],
      [oldSigned, oldSel],
    ] as const) {
      const [res] = await verifyDkim(raw);
      expect(res.status.result, JSON.stringify(res.status)).to.equal('pass');
      expect(res.selector).to.equal(sel);
    }

    clock.advance(7 * DAY + 1000);
    const v3 = await s.api('POST', `/v1/domains/${d.id}/verify`, { key });
    expect(v3.body.records.map((r: any) => r.state ?? r.purpose)).to.deep.equal([
      'current',
      'spf',
      'dmarc',
      'return_path',
      'return_path',
      'dmarc_report_auth',
    ]);
    expect(changes.filter((c) => c.domain.id === d.id).map((c) => `${c.from}>${c.to}`)).to.deep.equal([
      'pending>verified',
    ]);
  });

  it('the scheduled re-check switches keys too; the old record can go once the new key signs', async () => {
    const d = (await s.api('GET', '/v1/domains', { key })).body.data.find((x: any) => x.name === 'rot.test');
    const rot = (await s.api('POST', `/v1/domains/${d.id}/rotate-dkim`, { key })).body;
    const next = rot.records.find((r: any) => r.state === 'next');
    publishRecord(dns, next);
    const until = Date.now() + 8000;
    let got: any;
    do {
      await new Promise((res) => setTimeout(res, 100));
      got = (await s.api('GET', `/v1/domains/${d.id}`, { key })).body;
    } while (got.records[0].name !== next.name && Date.now() < until);
    expect(got.records[0]).to.include({ name: next.name, state: 'current', status: 'verified' });
    expect(got.records.filter((r: any) => r.state === 'retiring').map((r: any) => r.name)).to.deep.equal([
      d.records[0].name,
    ]);
    dns.delete(d.records[0].name);
    const v = await s.api('POST', `/v1/domains/${d.id}/verify`, { key });
    expect(v.body.status).to.equal('verified');
    const [res] = await verifyDkim(await deliver('news@mail.rot.test'));
    expect(res.status.result).to.equal('pass');
  });

  it("rotation needs domains:write and a domain of the caller's team", async () => {
    const d = (await s.api('GET', '/v1/domains', { key })).body.data.find((x: any) => x.name === 'rot.test');
    const before = (await s.api('GET', `/v1/domains/${d.id}`, { key })).body;
    const reader = s.key(team.id, 'live', ['domains:read']);
    const denied = await s.api('POST', `/v1/domains/${d.id}/rotate-dkim`, { key: reader });
    expect(denied.status).to.equal(403);
    const other = s.team();
    const otherKey = s.key(other.id, 'live', ['domains:read', 'domains:write']);
    const hidden = await s.api('POST', `/v1/domains/${d.id}/rotate-dkim`, { key: otherKey });
    expect(hidden.status).to.equal(404);
    expect(hidden.body.error.code).to.equal('domain_not_found');
    expect((await s.api('POST', '/v1/domains/dom_nope/rotate-dkim', { key })).status).to.equal(404);
    expect((await s.api('GET', `/v1/domains/${d.id}`, { key })).body.records).to.deep.equal(before.records);
  });

  it('Ed25519: its own record (not required); once verified, mail carries rsa-sha256 and ed25519-sha256 signatures that verify', async () => {
    const bad = await s.api('POST', '/v1/domains', { key, body: { name: 'ed.test', dkim: { ed25519: 'yes' } } });
    expect(bad.status).to.equal(422);
    const d = await addVerified('ed.test', { dkim: { ed25519: true } });
    expect(d.records.map((r: any) => r.purpose)).to.deep.equal([
      'dkim',
      'spf',
      'dmarc',
      'return_path',
      'return_path',
      'dkim',
      'dmarc_report_auth',
    ]);
    const ed = d.records[5];
    expect(ed).to.include({ state: 'current', algorithm: 'ed25519', signing: false, status: 'failed' });
    expect(ed.value).to.match(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
    expect(ed.name).not.to.equal(d.records[0].name);
    expect(d.status).to.equal('verified'); // the Ed25519 record does not block verification
    expect(selectors(await deliver('app@ed.test'))).to.have.length(1);

    publishRecord(dns, ed);
    const v = await s.api('POST', `/v1/domains/${d.id}/verify`, { key });
    expect(v.body.records[5]).to.include({ status: 'verified', signing: true });
    const raw = await deliver('app@ed.test');
    expect(raw.toString()).to.match(/^DKIM-Signature: v=1; a=rsa-sha256;/);
    expect(selectors(raw)).to.deep.equal([d.records[0].name.split('.')[0], ed.name.split('.')[0]]);
    const results = await verifyDkim(raw);
    expect(results.map((r: any) => [r.status.result, r.algo])).to.deep.equal([
      ['pass', 'rsa-sha256'],
      ['pass', 'ed25519-sha256'],
    ]);
  });
});
