// TLS reporting (RFC 8460) of real deliveries to loopback MXs under MTA-STS enforce and testing policies: the report
// `mta tls-report` prints for the day counts exactly the attempts the email events record.
import { gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import { mta } from '../helpers/cli.js';
import { stsPolicy, type PolicyServer } from '../helpers/policy-server.js';
import { tlsEnv, type TlsEnv } from '../helpers/tls-env.js';
import { sendTlsReports } from '../../src/jobs/tls-reports.js';
import { createResolver } from '../../src/services/resolver.js';
import { tlsReport } from '../../src/services/tls-reports.js';
import { route, sleep, type OutboundEnv } from './outbound-env.js';

const NAMES = ['good', 'wrong', 'testing'];
const dom = (n: string) => `${n}.rpt.test`;
const IP: Record<string, string> = { wrong: '127.0.0.2', testing: '127.0.0.2' };
const today = () => new Date().toISOString().slice(0, 10);

describe('TLS reporting (RFC 8460)', function () {
  this.timeout(60000);
  let w: TlsEnv;
  let e: OutboundEnv;
  let web: PolicyServer;
  let caPem: string;

  before(async () => {
    w = await tlsEnv({
      mxNames: NAMES.map((n) => `mx.${dom(n)}`),
      webNames: [...NAMES.map((n) => `mta-sts.${dom(n)}`), 'reports.rpt.test'],
      env: {
        MTA_RETRY_MIN_SECONDS: '30',
        MTA_RETRY_MAX_SECONDS: '60',
        MTA_OUTBOUND_TIMEOUT_SECONDS: '5',
        MTA_TLSRPT_FROM: 'tls-reports@sender.test',
        // the https: rua is on loopback (as webhooks in tests)
        MTA_ALLOW_PRIVATE_WEBHOOKS: 'true',
      },
    });
    ({ e, web } = w);
    caPem = w.ca.caPem;
    for (const n of NAMES) {
      route(e.dns, dom(n), IP[n] ?? '127.0.0.1');
      w.sts(dom(n), stsPolicy(n === 'testing' ? 'testing' : 'enforce', `mx.${dom(n)}`));
    }
  });
  after(() => w.close());

  const eventOf = (id: string, type: string, ms?: number) => w.eventOf(id, type, ms);
  const send = async (n: string, local = 'user') => (await e.send({ to: `${local}@${dom(n)}` })).id as string;
  const report = async (domain: string, date = today()) =>
    mta(['tls-report', '--domain', domain, '--date', date], {
      MTA_DATA_DIR: e.s.config.dataDir,
      MTA_HOSTNAME: e.s.config.hostname,
    });

  it('enforce, good certificate: every attempt a successful sts session, policy as fetched', async () => {
    for (const id of [await send('good', 'a'), await send('good', 'b')]) await eventOf(id, 'delivered');
    const r = await report(dom('good'));
    expect(r.code, r.stderr).to.equal(0);
    const json = JSON.parse(r.stdout);
    expect(json['organization-name']).to.equal(e.s.config.hostname);
    expect(json['contact-info']).to.equal(`postmaster@${e.s.config.hostname}`);
    expect(json['date-range']).to.deep.equal({
      'start-datetime': `${today()}T00:00:00.000Z`,
      'end-datetime': `${today()}T23:59:59.000Z`,
    });
    expect(json['report-id']).to.be.a('string').and.include(dom('good'));
    expect(json.policies).to.deep.equal([
      {
        policy: {
          'policy-type': 'sts',
          'policy-string': ['version: STSv1', 'mode: enforce', `mx: mx.${dom('good')}`, 'max_age: 86400'],
          'policy-domain': dom('good'),
          'mx-host': [`mx.${dom('good')}`],
        },
        summary: { 'total-successful-session-count': 2, 'total-failure-session-count': 0 },
        'failure-details': [],
      },
    ]);
  });

  it('enforce, certificate for another name: failures as certificate-host-mismatch, one per attempt', async () => {
    const id = await send('wrong');
    const ev = await eventOf(id, 'delivery_delayed');
    expect(ev.data.tls).to.include({ policy: 'mta-sts', verified: false, result_type: 'certificate-host-mismatch' });
    const attempts = (await e.events(id)).filter((x: any) => x.data?.tls).length;
    const json = JSON.parse((await report(dom('wrong'))).stdout);
    expect(json.policies).to.have.length(1);
    expect(json.policies[0].summary).to.deep.equal({
      'total-successful-session-count': 0,
      'total-failure-session-count': attempts,
    });
    expect(json.policies[0]['failure-details']).to.deep.equal([
      {
        'result-type': 'certificate-host-mismatch',
        // a session refused during its set-up: the source address was the kernel's, not recorded
        ...(ev.data.source_ip ? { 'sending-mta-ip': ev.data.source_ip } : {}),
        'receiving-mx-hostname': `mx.${dom('wrong')}`,
        'receiving-ip': '127.0.0.2',
        'failed-session-count': attempts,
      },
    ]);
  });

  it('testing: delivered all the same, counted as a failure of the testing policy', async () => {
    const id = await send('testing');
    const ev = await eventOf(id, 'delivered');
    expect(ev.data.tls).to.include({ policy: 'mta-sts', result_type: 'certificate-host-mismatch' });
    const json = JSON.parse((await report(dom('testing'))).stdout);
    expect(json.policies[0].policy['policy-string']).to.include('mode: testing');
    expect(json.policies[0].summary).to.deep.equal({
      'total-successful-session-count': 0,
      'total-failure-session-count': 1,
    });
    expect(json.policies[0]['failure-details'][0]).to.include({
      'result-type': 'certificate-host-mismatch',
      'failed-session-count': 1,
    });
  });

  it('a day without traffic has no report; bad arguments are usage errors', async function () {
    this.timeout(120000); // three `mta` processes
    const none = await report(dom('good'), '2020-01-01');
    expect(none.code).to.equal(1);
    expect(none.stderr).to.match(/no TLS report/);
    expect((await report(dom('good'), '2020-13-01')).code).to.not.equal(0);
    expect((await mta(['tls-report', '--domain', dom('good')], { MTA_DATA_DIR: e.s.config.dataDir })).code).to.equal(2);
  });

  it("MTA_TLSRPT: the day's report to a mailto: rua (DKIM-signed gzip JSON) and an https: rua, once; report mail not counted", async () => {
    const d = dom('good');
    e.dns.set(`_smtp._tls.${d}`, {
      TXT: [`v=TLSRPTv1; rua=mailto:tlsrpt@rua.rpt.test,https://reports.rpt.test:${web.port}/v1/tlsrpt`],
    });
    e.dns.set('reports.rpt.test', { A: ['127.0.0.1'] });
    e.dns.set('rua.rpt.test', { MX: [{ exchange: 'mx.rua.rpt.test', priority: 10 }] });
    e.dns.set('mx.rua.rpt.test', { A: ['127.0.0.1'] });
    const deps = { resolver: createResolver(e.s.config), ca: caPem };
    const expected = await tlsReport(e.s.ctx, d, today());
    const run = await sendTlsReports(e.s.ctx, deps, today());
    // wrong.rpt.test and testing.rpt.test had traffic but publish no _smtp._tls record
    expect(run).to.deep.equal({ day: today(), sent: 2, unpublished: 2, failed: 0 });

    expect(web.posts).to.have.length(1);
    const post = web.posts[0];
    expect(post).to.include({ host: 'reports.rpt.test', path: '/v1/tlsrpt' });
    expect(post.headers['content-type']).to.equal('application/tlsrpt+gzip');
    expect(JSON.parse(gunzipSync(post.body).toString())).to.deep.equal(expected);

    const until = Date.now() + 10000;
    while (e.mx.to('tlsrpt@rua.rpt.test').length === 0 && Date.now() < until) await sleep(50);
    const [mail] = e.mx.to('tlsrpt@rua.rpt.test');
    expect(mail, 'report mail received').to.not.equal(undefined);
    const parsed = await simpleParser(mail.raw);
    expect(mail.raw.toString()).to.match(/^DKIM-Signature:[^]*?\bd=sender\.test;/m);
    expect(mail.secure, 'report mail over TLS (so it would have been counted)').to.equal(true);
    // RFC 8460 §5.3: a multipart/report of report-type tlsrpt.
    expect(parsed.headers.get('content-type')).to.deep.include({ value: 'multipart/report' });
    expect((parsed.headers.get('content-type') as { params: Record<string, string> }).params).to.include({
      'report-type': 'tlsrpt',
    });
    expect(parsed.headers.get('tls-report-domain')).to.equal(d);
    expect(parsed.headers.get('tls-report-submitter')).to.equal(e.s.config.hostname);
    expect(parsed.subject).to.equal(
      `Report Domain: ${d} Submitter: ${e.s.config.hostname} Report-ID: <${expected!['report-id']}>`,
    );
    const att = parsed.attachments.find((a) => a.contentType === 'application/tlsrpt+gzip');
    expect(att?.filename).to.match(new RegExp(`^${e.s.config.hostname}!${d}!\\d+!\\d+\\.json\\.gz$`));
    expect(JSON.parse(gunzipSync(att!.content).toString())).to.deep.equal(expected);

    // The report mail's own delivery (TLS to the rua's MX) is not counted for rua.rpt.test.
    await sleep(300);
    expect(await tlsReport(e.s.ctx, 'rua.rpt.test', today())).to.equal(null);
    // Sent once: a second run sends nothing.
    expect(await sendTlsReports(e.s.ctx, deps, today())).to.deep.include({ sent: 0 });
    expect(web.posts).to.have.length(1);
    // No report for a day without traffic.
    expect(await sendTlsReports(e.s.ctx, deps, '2020-01-01')).to.deep.include({ sent: 0, unpublished: 0 });
  });
});
