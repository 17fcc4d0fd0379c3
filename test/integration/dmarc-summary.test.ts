// The per-domain DMARC view (decisions.md "DMARC summary"): reports sent over SMTP to the real inbound listener,
// then GET /v1/domains/{id}/dmarc (rates, sources largest first, `ours` for a configured sending IP, reverse DNS
// from the loopback DNS server, the window and its 422s), the cursor list of reports, another team's domain (404),
// `mta dmarc` as a child process, and the dashboard's domain page (pass-rate chart, sources failing-foreign first).
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { TestDns } from '../helpers/dns.js';
import { mta } from '../helpers/cli.js';
import { FormClient } from '../helpers/form-client.js';
import { feature as inboundFeature } from '../../src/features/inbound.js';
import { feature as domainsFeature } from '../../src/features/domains.js';
import { feature as dashboardFeature } from '../../src/features/dashboard.js';
import { newId } from '../../src/core/ids.js';
import { smtpPort, smtpSend } from './inbound-fixtures.js';
import { aggregateReport as report, reporterKey, signedBy } from '../helpers/dmarc-report.js';

const DAY = 86_400_000;
describe('DMARC summary of a domain', function () {
  this.timeout(60_000);
  let s: TestService;
  let dns: TestDns;
  let teamA: string;
  let domA: string;
  let domB: string;
  let keyA: string;
  let keyB: string;
  const day0 = Math.floor(Date.now() / DAY) * DAY - 3 * DAY;

  const addDomain = (teamId: string, name: string) => {
    const id = newId('dom', Date.now());
    s.db
      .prepare(`INSERT INTO domains (id, team_id, name, status, created_at) VALUES (?, ?, ?, 'verified', ?)`)
      .run(id, teamId, name, Date.now());
    return id;
  };
  const send = async (msg: string) => {
    const r = await smtpSend(smtpPort(s), { from: 'r@reports.example', to: ['dmarc@bounces.mta.test'] }, msg);
    expect(r.response, r.response).to.match(/^250 2\.0\.0 DMARC report dmr_/);
  };

  before(async () => {
    dns = await new TestDns().start();
    dns.set(TestDns.reverseName('192.0.2.10'), { PTR: ['out1.mta.test.'] });
    dns.set(TestDns.reverseName('203.0.113.5'), { PTR: ['Host.Spoofer.example'] });
    dns.set(TestDns.reverseName('198.51.100.7'), { stall: true });
    s = await startTestService({
      features: [inboundFeature, domainsFeature, dashboardFeature],
      env: { MTA_DNS_SERVERS: dns.server, MTA_SENDING_IPS: '192.0.2.10,2001:db8::10', MTA_RATE_LIMIT: '0' },
    });
    teamA = s.team().id;
    const teamB = s.team().id;
    domA = addDomain(teamA, 'example.com');
    domB = addDomain(teamB, 'other.test');
    keyA = s.key(teamA, 'test', ['domains:read', 'emails:read']);
    keyB = s.key(teamB, 'live', ['domains:read']);
    // Each reporter signs its reports (a key on the loopback DNS, aligned with the report's own address), as the
    // large ones do; a summary counts only reports something aligned with their reporter vouches for.
    const google = reporterKey(dns, 'google.com');
    const yahoo = reporterKey(dns, 'yahoo.com');
    const mailru = reporterKey(dns, 'mail.ru');
    await send(
      await signedBy(
        google,
        report('google.com', 'g1', 'example.com', day0, [
          { ip: '192.0.2.10', count: 40 },
          { ip: '203.0.113.5', count: 5, dkim: 'fail', spf: 'fail', disp: 'reject' },
        ]),
      ),
    );
    await send(
      await signedBy(
        yahoo,
        report(
          'Yahoo',
          'y1',
          'example.com',
          day0 + DAY,
          [
            { ip: '192.0.2.10', count: 20 },
            { ip: '198.51.100.7', count: 30, spf: 'fail' },
            { ip: '203.0.113.5', count: 3, dkim: 'fail', spf: 'fail', disp: 'quarantine' },
            { ip: '2001:DB8::10', count: 2 },
          ],
          'dmarc@yahoo.com',
        ),
      ),
    );
    await send(
      await signedBy(
        mailru,
        report(
          'Mail.Ru',
          'm1',
          'example.com',
          day0 - 20 * DAY,
          [{ ip: '203.0.113.99', count: 100, dkim: 'fail', spf: 'fail' }],
          'dmarc@mail.ru',
        ),
      ),
    );
    await send(
      await signedBy(google, report('google.com', 'o1', 'other.test', day0, [{ ip: '192.0.2.77', count: 9 }])),
    );
    // A forged one: claims to be Google's, signed by nobody. Stored and listed, counted nowhere.
    await send(
      report('google.com', 'f1', 'example.com', day0, [
        { ip: '203.0.113.66', count: 1000, dkim: 'fail', spf: 'fail', disp: 'reject' },
      ]),
    );
  });
  after(async () => {
    await s?.close();
    await dns?.stop();
  });

  it('sums the last 7 days by source, largest first, with ours and reverse DNS, for a test key', async () => {
    const t0 = Date.now();
    const r = await s.api('GET', `/v1/domains/${domA}/dmarc`, { key: keyA });
    // The reverse lookups answer by their deadline (1.5 s, services/reverse-dns.ts), the stalled name as null (below).
    // The bound is against a lookup left to the resolver's defaults (c-ares: 4 tries of 5 s, 20 s and more), not the
    // 1.5 s (was 2.5 s: the parallel test phase's load can stretch that).
    expect(Date.now() - t0, 'a stalled resolver does not hold the summary').to.be.below(10_000);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.include({
      object: 'dmarc_summary',
      domain: 'example.com',
      reports: 2,
      messages: 100,
      unauthenticated_reports: 1, // the forged f1's 1,000 messages from 203.0.113.66 are in no figure
    });
    expect(Date.parse(r.body.to) - Date.parse(r.body.from)).to.equal(7 * DAY);
    expect(r.body.dmarc_pass_rate).to.equal(0.92); // 40 + 20 + 30 + 2 of 100
    expect(r.body.dkim_aligned_rate).to.equal(0.92);
    expect(r.body.spf_aligned_rate).to.equal(0.62);
    expect(r.body.sources.map((x: any) => [x.source_ip, x.messages])).to.deep.equal([
      ['192.0.2.10', 60],
      ['198.51.100.7', 30],
      ['203.0.113.5', 8],
      ['2001:db8::10', 2],
    ]);
    const [ours, stalled, spoofer, v6] = r.body.sources;
    expect(ours).to.deep.include({ reverse_dns: 'out1.mta.test', ours: true, dmarc_pass: 60, spf_aligned: 60 });
    expect(ours.reporters).to.deep.equal(['Yahoo', 'google.com']);
    expect(stalled).to.deep.include({
      reverse_dns: null,
      ours: false,
      dmarc_pass: 30,
      spf_aligned: 0,
      dkim_aligned: 30,
    });
    expect(spoofer).to.deep.include({ reverse_dns: 'host.spoofer.example', ours: false, dmarc_pass: 0 });
    expect(spoofer.disposition).to.deep.equal({ none: 0, quarantine: 3, reject: 5 });
    expect(v6).to.include({ ours: true, reverse_dns: null });
  });

  it('takes a window of report start times, and refuses a bad one with 422', async () => {
    const from = new Date(day0 - 21 * DAY).toISOString();
    const to = new Date(day0 - 19 * DAY).toISOString();
    const r = await s.api('GET', `/v1/domains/${domA}/dmarc?from=${from}&to=${to}`, { key: keyA });
    expect(r.body).to.include({ reports: 1, messages: 100, dmarc_pass_rate: 0, unauthenticated_reports: 0, from, to });
    expect(r.body.sources).to.have.length(1);
    for (const [q, param] of [
      ['from=yesterday', 'from'],
      [`from=${to}&to=${from}`, 'from'],
      [`from=2020-01-01&to=2021-01-01`, 'to'],
      ['days=3', undefined],
    ] as const) {
      const bad = await s.api('GET', `/v1/domains/${domA}/dmarc?${q}`, { key: keyA });
      expect(bad.status, q).to.equal(422);
      if (param) expect(bad.body.error.param, q).to.equal(param);
    }
  });

  it("lists a domain's reports with a cursor, and hides another team's domain (404)", async () => {
    const p1 = await s.api('GET', `/v1/domains/${domA}/dmarc/reports?limit=2`, { key: keyA });
    expect(p1.status).to.equal(200);
    // Every report is listed, the forged one too, with whether it was authenticated.
    expect(p1.body.data.map((x: any) => x.report_id)).to.deep.equal(['f1', 'm1']);
    expect(p1.body.data[0]).to.include({ org_name: 'google.com', authenticated: false, authenticated_by: null });
    expect(p1.body.data[1]).to.include({ authenticated: true, authenticated_by: 'dkim:mail.ru' });
    expect(p1.body.has_more).to.equal(true);
    const p2 = await s.api('GET', `/v1/domains/${domA}/dmarc/reports?limit=2&cursor=${p1.body.next_cursor}`, {
      key: keyA,
    });
    expect(p2.body.data.map((x: any) => x.report_id)).to.deep.equal(['y1', 'g1']);
    expect(p2.body.data[0]).to.include({ object: 'dmarc_report', org_name: 'Yahoo', records: 4, messages: 55 });
    expect(p2.body.data[0].begin).to.equal(new Date(day0 + DAY).toISOString());
    expect(p2.body).to.include({ has_more: false, next_cursor: null });
    for (const p of [`/v1/domains/${domA}/dmarc`, `/v1/domains/${domA}/dmarc/reports`]) {
      const other = await s.api('GET', p, { key: keyB });
      expect(other.status, p).to.equal(404);
      expect(other.body.error.code).to.equal('domain_not_found');
    }
    const own = await s.api('GET', `/v1/domains/${domB}/dmarc`, { key: keyB });
    expect(own.body).to.include({ reports: 1, messages: 9 });
  });

  it('`mta dmarc --domain NAME [--days N]` prints the summary JSON', async () => {
    const env = {
      MTA_DATA_DIR: s.config.dataDir,
      MTA_DNS_SERVERS: dns.server,
      MTA_SENDING_IPS: '192.0.2.10',
      MTA_HOSTNAME: 'mta.test',
    };
    const week = await mta(['dmarc', '--domain', 'example.com'], env);
    expect(week.code, week.stderr).to.equal(0);
    const sum = JSON.parse(week.stdout);
    expect(sum).to.include({ object: 'dmarc_summary', domain: 'example.com', reports: 2, messages: 100 });
    expect(sum.sources[0]).to.include({ source_ip: '192.0.2.10', ours: true, reverse_dns: 'out1.mta.test' });
    const month = JSON.parse((await mta(['dmarc', '--domain', 'example.com', '--days', '30'], env)).stdout);
    expect(month).to.include({ reports: 3, messages: 200 });
    expect(month.sources[0].source_ip).to.equal('203.0.113.99');
    const bad = await mta(['dmarc', '--domain', 'example.com', '--days', '0'], env);
    expect(bad.code).to.equal(2); // a usage error
    expect(bad.stderr).to.contain('--days is 1 to 90');
    expect((await mta(['dmarc', '--domain', 'nope.test'], env)).stderr).to.match(/domain_not_found/);
  });

  it("shows the pass rate by day and the sources, failing foreign ones first, on the domain's page", async () => {
    const c = new FormClient(s.url);
    expect((await c.signInWith({ key: keyA })).status).to.equal(303);
    const page = await c.req('GET', `/dashboard/domains/${domA}`);
    expect(page.status).to.equal(200);
    expect(page.text).to.not.match(/ style=|<script>/);
    const fig = /<figure class="chart[^"]*" id="chart-dmarc"[\s\S]*?<\/figure>/.exec(page.text)?.[0] ?? '';
    expect(fig).to.match(/<svg[^>]*role="img"/);
    expect(fig).to.contain(`<th scope="row">${new Date(day0).toISOString().slice(0, 10)}</th>`);
    const table = /<table[^>]*id="dmarc-sources"[\s\S]*?<\/table>/.exec(page.text)?.[0] ?? '';
    const ips = [...table.matchAll(/<td data-label="Source"><code>([^<]+)<\/code>/g)].map((m) => m[1]);
    // the last 30 days: Mail.Ru's 100 failing messages from 203.0.113.99 come first, then Google's and Yahoo's 8
    expect(ips).to.deep.equal(['203.0.113.99', '203.0.113.5', '192.0.2.10', '198.51.100.7', '2001:db8::10']);
    expect(table).to.contain('host.spoofer.example').and.contain('out1.mta.test');
    expect(table.match(/data-ours="true"/g)).to.have.length(2);
    expect(page.text).to.match(
      /One more report, which nothing aligned with the reporter\s+vouched for, is not counted/,
    );
  });
});
