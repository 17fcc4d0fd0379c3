// postmaster@ and abuse@ (RFC 5321 §4.5.1) at MTA_HOSTNAME and the bounce domain, over real SMTP on loopback:
// accepted, kept as inbound reports of kind `postmaster` that `mta reports list` shows and `mta reports show` prints;
// any other local part there stays 550, and nothing is relayed.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as inboundFeature } from '../../src/features/inbound.js';
import { mta } from '../helpers/cli.js';
import { smtpPort, smtpSend } from './inbound-fixtures.js';

const message = (subject: string) =>
  `From: Someone <someone@remote.test>\r\nTo: postmaster@mta.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@remote.test>\r\n\r\nYour server sent us spam.\r\n`;

describe('inbound listener: postmaster@ and abuse@', function () {
  this.timeout(60_000);
  let s: TestService;
  let port: number;
  before(async () => {
    s = await startTestService({ features: [inboundFeature] });
    port = smtpPort(s);
  });
  after(() => s.close());

  it('accepts postmaster@<MTA_HOSTNAME> and abuse@<bounce domain>; mta reports list shows them as kind postmaster', async () => {
    const pm = await smtpSend(port, { from: 'someone@remote.test', to: ['Postmaster@MTA.test'] }, message('first'));
    expect(pm.ok, pm.response).to.equal(true);
    expect(pm.response).to.match(/^250 2\.0\.0 Message rep_[0-9a-z]{26} received/);
    const abuse = await smtpSend(
      port,
      { from: 'someone@remote.test', to: ['abuse@bounces.mta.test'] },
      message('second'),
    );
    expect(abuse.ok, abuse.response).to.equal(true);
    const both = await smtpSend(
      port,
      { from: '', to: ['abuse@mta.test', 'postmaster@bounces.mta.test'] },
      message('third'),
    );
    expect(both.ok, both.response).to.equal(true);

    const r = await mta(['reports', 'list'], { MTA_DATA_DIR: s.config.dataDir });
    expect(r.code, r.stderr).to.equal(0);
    const rows = JSON.parse(r.stdout) as Record<string, any>[];
    expect(rows.map((x) => [x.kind, x.rcpt_to, x.parsed.subject])).to.deep.equal([
      ['postmaster', 'abuse@mta.test,postmaster@bounces.mta.test', 'third'],
      ['postmaster', 'abuse@bounces.mta.test', 'second'],
      ['postmaster', 'Postmaster@MTA.test', 'first'],
    ]);
    expect(rows[2]).to.include({ has_raw: true, mail_from: 'someone@remote.test' });
    const shown = await mta(['reports', 'show', rows[2].id], { MTA_DATA_DIR: s.config.dataDir });
    expect(shown.stdout).to.include('Your server sent us spam.');
  });

  it('refuses other local parts at those domains, and postmaster@ elsewhere (550, nothing kept)', async () => {
    const before = JSON.parse((await mta(['reports', 'list'], { MTA_DATA_DIR: s.config.dataDir })).stdout).length;
    for (const to of ['info@mta.test', 'root@bounces.mta.test', 'postmaster@example.com', 'abuse@other.test']) {
      const r = await smtpSend(port, { from: 'someone@remote.test', to: [to] }, message('nope'));
      expect(r, to).to.include({ ok: false, code: 550 });
    }
    const after = JSON.parse((await mta(['reports', 'list'], { MTA_DATA_DIR: s.config.dataDir })).stdout).length;
    expect(after).to.equal(before);
  });

  it('keeps mail to postmaster@ within the byte budget of the listener (552 past MTA_INBOUND_MAX_BYTES)', async () => {
    const big = message('big') + 'x'.repeat(s.config.inboundMaxBytes + 10) + '\r\n';
    const r = await smtpSend(port, { from: 'someone@remote.test', to: ['postmaster@mta.test'] }, big);
    expect(r).to.include({ ok: false, code: 552 });
  });
});
