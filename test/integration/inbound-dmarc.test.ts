// DMARC aggregate reports over real SMTP on loopback: dmarc@<bounce domain> (and dmarc+tag@) accepted, a report for a
// team's domain stored once per (org, report id) with its records, one for a domain no team holds accepted and
// dropped, a zip bomb kept as unreadable while the listener keeps answering.
import fs from 'node:fs';
import zlib from 'node:zlib';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as inboundFeature } from '../../src/features/inbound.js';
import { newId } from '../../src/core/ids.js';
import { listInboundReports } from '../../src/store/inbound-reports.js';
import { dmarcRecordsOf, dmarcReportByOrgId, dmarcReportsOfDomain } from '../../src/store/dmarc.js';
import { smtpPort, smtpSend, ehlo } from './inbound-fixtures.js';
import { runSync } from '../../src/store/op.js';

const fixture = (f: string) => fs.readFileSync(`test/fixtures/dmarc/${f}`);
const FROM = 'noreply-dmarc-support@google.com';

describe('inbound listener: DMARC aggregate reports', function () {
  this.timeout(30_000);
  let s: TestService;
  let port: number;
  let teamId: string;
  let domainId: string;
  const count = (table: string) =>
    Number((s.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number | string }).n);

  before(async () => {
    s = await startTestService({ features: [inboundFeature] });
    port = smtpPort(s);
    teamId = s.team().id;
    domainId = newId('dom', Date.now());
    s.db
      .prepare(
        `INSERT INTO domains (id, team_id, name, status, created_at) VALUES (?, ?, 'example.com', 'verified', ?)`,
      )
      .run(domainId, teamId, Date.now());
  });
  after(() => s.close());

  it('accepts dmarc@ and dmarc+tag@ on the bounce domain only', async () => {
    const other = await smtpSend(port, { from: FROM, to: ['dmarc@example.com'] }, fixture('yahoo-gz-attachment.eml'));
    expect(other).to.include({ ok: false, code: 550 });
    const tagged = await smtpSend(
      port,
      { from: FROM, to: ['DMARC+rua@bounces.mta.test'] },
      fixture('yahoo-gz-attachment.eml'),
    );
    expect(tagged.ok, tagged.response).to.equal(true);
    expect(tagged.response).to.match(/^250 2\.0\.0 DMARC report dmr_[0-9a-z]{26} received/);
  });

  it('stores a gz report for a team domain once, with its records, however often it is sent', async () => {
    const raw = fixture('google-gz-attachment.eml');
    const first = await smtpSend(port, { from: FROM, to: ['dmarc@bounces.mta.test'] }, raw);
    expect(first.ok, first.response).to.equal(true);
    const again = await smtpSend(port, { from: FROM, to: ['dmarc+again@bounces.mta.test'] }, raw);
    expect(again.ok, again.response).to.equal(true);
    expect(again.response.match(/dmr_\w+/)?.[0]).to.equal(first.response.match(/dmr_\w+/)?.[0]);
    const r = runSync(dmarcReportByOrgId(s.db, 'google.com', '5717107811868587392'))!;
    expect(r).to.include({ team_id: teamId, domain_id: domainId, domain: 'example.com', records: 2, messages: 45 });
    expect(r).to.include({ begin_at: 1699920000 * 1000, end_at: (1699920000 + 86399) * 1000, schema: 'rfc7489' });
    expect(
      Number(s.db.prepare("SELECT count(*) AS n FROM dmarc_reports WHERE org_name = 'google.com'").pluck().get()),
    ).to.equal(1);
    const rows = runSync(dmarcRecordsOf(s.db, r.seq)).map((x) => [
      x.source_ip,
      Number(x.count),
      Number(x.dmarc_pass),
      x.disposition,
    ]);
    expect(rows).to.deep.equal([
      ['192.0.2.10', 42, 1, 'none'],
      ['203.0.113.5', 3, 0, 'none'],
    ]);
    const listed = runSync(dmarcReportsOfDomain(s.db, domainId, 0, Date.now(), null, 10)).map((x) => x.report_id);
    expect(listed).to.include('5717107811868587392');
  });

  it('files a report about a subdomain under the team domain, and reads the RFC 9990 schema', async () => {
    expect(
      (await smtpSend(port, { from: FROM, to: ['dmarc@bounces.mta.test'] }, fixture('subdomain-and-bad-row.eml'))).ok,
    ).to.equal(true);
    expect(runSync(dmarcReportByOrgId(s.db, 'rows.example', 'rows-1'))).to.include({
      domain_id: domainId,
      domain: 'mail.example.com',
      records: 2,
    });
    expect(
      (await smtpSend(port, { from: FROM, to: ['dmarc@bounces.mta.test'] }, fixture('rfc9990-prefixed-gz-body.eml')))
        .ok,
    ).to.equal(true);
    const bis = runSync(dmarcReportByOrgId(s.db, 'receiver.example', 'rfc9990-0002'))!;
    expect(bis).to.include({ schema: 'rfc9990', generator: 'Example DMARC reporter 2.1' });
    expect(JSON.parse(bis.policy_json)).to.include({ np: 'reject', testing: 'y', discovery_method: 'treewalk' });
  });

  it('accepts and drops a report for a domain no team holds', async () => {
    const reports = count('dmarc_reports');
    const inbound = count('inbound_reports');
    const xml = `<?xml version="1.0"?><feedback><report_metadata><org_name>x.example</org_name><report_id>nobody-1</report_id>
<date_range><begin>1699920000</begin><end>1700006399</end></date_range></report_metadata>
<policy_published><domain>nobody.test</domain><p>none</p></policy_published>
<record><row><source_ip>192.0.2.1</source_ip><count>1</count><policy_evaluated><disposition>none</disposition><dkim>pass</dkim><spf>pass</spf></policy_evaluated></row><identifiers><header_from>nobody.test</header_from></identifiers></record></feedback>`;
    const msg = `From: r@x.example\r\nTo: dmarc@bounces.mta.test\r\nSubject: Report Domain: nobody.test\r\nContent-Type: application/gzip\r\nContent-Transfer-Encoding: base64\r\n\r\n${zlib.gzipSync(xml).toString('base64')}\r\n`;
    const r = await smtpSend(port, { from: 'r@x.example', to: ['dmarc@bounces.mta.test'] }, msg);
    expect(r.ok, r.response).to.equal(true);
    expect(r.response).to.match(/^250 2\.0\.0 DMARC report received/);
    expect(count('dmarc_reports')).to.equal(reports);
    expect(count('inbound_reports')).to.equal(inbound);
  });

  it('keeps a zip bomb as unreadable (capped raw) and the listener goes on answering and reading', async () => {
    const bomb = await smtpSend(port, { from: FROM, to: ['dmarc@bounces.mta.test'] }, fixture('hostile-zip-bomb.eml'));
    expect(bomb.ok, bomb.response).to.equal(true);
    const id = bomb.response.match(/rep_\w+/)?.[0];
    const kept = runSync(listInboundReports(s.db, 'ignored', 5)).find((x) => x.id === id)!;
    expect(kept).to.include({ kind: 'other', rcpt_to: 'dmarc@bounces.mta.test' });
    expect(JSON.parse(kept.parsed_json).dmarc).to.include({ error: 'too_large' });
    expect(Buffer.from(kept.raw!).length).to.be.above(0);
    for (const f of ['hostile-billion-laughs.eml', 'hostile-truncated-gzip.eml', 'hostile-nested-zip.eml'])
      expect((await smtpSend(port, { from: FROM, to: ['dmarc@bounces.mta.test'] }, fixture(f))).response, f).to.match(
        /rep_/,
      );
    expect((await ehlo(port)).banner).to.match(/^220 /);
    const ok = await smtpSend(
      port,
      { from: FROM, to: ['dmarc@bounces.mta.test'] },
      fixture('mailru-zip-attachment.eml'),
    );
    expect(ok.response).to.match(/dmr_/);
  });
});
