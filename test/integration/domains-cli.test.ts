// `mta domain add` / `mta domain verify` as real child processes against a temp data folder and the
// loopback DNS server: stdout is the domain record JSON and nothing else.
import { expect } from 'chai';
import { tempDir } from '../helpers/service.js';
import { mta } from '../helpers/cli.js';
import { TestDns } from '../helpers/dns.js';
import { publish } from '../helpers/domains.js';

describe('mta domain add / verify', function () {
  this.timeout(60_000);
  let dns: TestDns;
  let env: Record<string, string>;
  before(async () => {
    dns = await new TestDns().start();
    env = {
      MTA_DATA_DIR: tempDir(),
      MTA_HOSTNAME: 'mta.test',
      MTA_DNS_SERVERS: dns.server,
      MTA_DNS_CHECK_TIMEOUT_SECONDS: '0.5',
    };
  });
  after(() => dns.stop());

  it('prints the record JSON with the DNS records, then verifies once they are published', async () => {
    expect((await mta(['team', 'create', 'T'], env)).code).to.equal(0);
    const added = await mta(['domain', 'add', '--team', 'T', 'example.test'], env);
    expect(added.code, added.stderr).to.equal(0);
    const d = JSON.parse(added.stdout);
    expect(d).to.include({ object: 'domain', name: 'example.test', status: 'pending' });
    expect(d.records.map((r: any) => r.purpose)).to.deep.equal([
      'dkim',
      'spf',
      'dmarc',
      'return_path',
      'return_path',
      'dmarc_report_auth',
    ]);
    // No MTA_SENDING_IPS: SPF authorises the host name, whose A record is what gets evaluated.
    expect(d.records[1].value).to.equal('v=spf1 a:mta.test ~all');
    expect(d.records[4]).to.include({ type: 'TXT', name: 'bounces.example.test', value: 'v=spf1 a:mta.test ~all' });
    expect(added.stdout).not.to.match(/PRIVATE/);

    const again = await mta(['domain', 'add', '--team', 'T', 'example.test'], env);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/domain_exists/);
    expect(again.stdout).to.equal('');

    publish(dns, d);
    const noAddr = JSON.parse((await mta(['domain', 'verify', 'example.test'], env)).stdout);
    expect(noAddr.status).to.equal('pending');
    expect(noAddr.records[1].error).to.match(/mta\.test has no A\/AAAA record/);
    dns.set('mta.test', { A: ['192.0.2.25'] });
    const v = await mta(['domain', 'verify', 'example.test'], env);
    expect(v.code, v.stderr).to.equal(0);
    expect(JSON.parse(v.stdout)).to.include({ id: d.id, status: 'verified' });

    const unknown = await mta(['domain', 'verify', 'nope.test'], env);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.match(/domain_not_found/);
  });
});
