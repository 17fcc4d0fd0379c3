// Audit finding 10 (/metrics): with MTA_METRICS_TOKEN set, /metrics needs `Authorization: Bearer <token>`;
// without it, only loopback clients are answered (everyone else gets the 404 of an unknown route).
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as operations } from '../../src/features/operations.js';
import { isLoopback, metricsAllowed } from '../../src/http/metrics.js';
import { loadConfig } from '../../src/config/load.js';

const TOKEN = 'metrics-token-0123456789abcdef';

describe('security: /metrics access', function () {
  this.timeout(15_000);

  describe('with MTA_METRICS_TOKEN set', () => {
    let s: TestService;
    before(async () => {
      s = await startTestService({ features: [operations], env: { MTA_METRICS_TOKEN: TOKEN } });
    });
    after(() => s.close());

    it('answers the right bearer token only, even to a loopback client', async () => {
      const ok = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).to.equal(200);
      expect(await ok.text()).to.contain('mta_events_total');
      for (const authorization of [
        undefined,
        `Bearer ${TOKEN}x`,
        `Bearer ${TOKEN.slice(0, -1)}`,
        `Basic ${TOKEN}`,
        TOKEN,
      ]) {
        const r = await fetch(`${s.url}/metrics`, { headers: authorization ? { authorization } : {} });
        expect(r.status, String(authorization)).to.equal(404);
        const body = await r.json();
        expect(body.error.code).to.equal('route_not_found');
        expect(JSON.stringify(body)).not.to.contain('mta_');
      }
    });
  });

  describe('without a token', () => {
    let s: TestService;
    before(async () => {
      s = await startTestService({ features: [operations] });
    });
    after(() => s.close());

    it('answers a loopback client, whatever a forwarding header claims', async () => {
      const r = await fetch(`${s.url}/metrics`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
      expect(r.status).to.equal(200);
    });

    it('refuses any client address outside loopback', () => {
      for (const ip of ['127.0.0.1', '127.3.2.1', '::1', '::ffff:127.0.0.1']) expect(isLoopback(ip), ip).to.equal(true);
      for (const ip of [
        '10.0.0.1',
        '192.168.1.2',
        '::ffff:10.0.0.1',
        '::',
        '0.0.0.0',
        '2001:db8::1',
        '128.0.0.1',
        '',
      ]) {
        expect(isLoopback(ip), ip).to.equal(false);
        expect(metricsAllowed(undefined, '', ip), ip).to.equal(false);
      }
      expect(metricsAllowed(TOKEN, `Bearer ${TOKEN}`, '203.0.113.9')).to.equal(true);
    });
  });

  it('refuses a token shorter than 16 characters at start-up, naming the setting', () => {
    expect(() => loadConfig({ env: { MTA_METRICS_TOKEN: 'short' } })).to.throw(/MTA_METRICS_TOKEN|metricsToken/);
  });
});
