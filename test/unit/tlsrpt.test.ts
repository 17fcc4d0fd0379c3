// The `_smtp._tls` TXT record (RFC 8460 §3), the report mail's subject and file name.
import { expect } from 'chai';
import { tlsrptFilename, tlsrptRua, tlsrptSubject } from '../../src/core/tlsrpt.js';

describe('core/tlsrpt', () => {
  it('reads the rua URIs of the single TLSRPTv1 record', () => {
    expect(tlsrptRua(['v=TLSRPTv1; rua=mailto:tls@example.com,https://r.example.com/v1'])).to.deep.equal([
      'mailto:tls@example.com',
      'https://r.example.com/v1',
    ]);
    expect(tlsrptRua(['v=spf1 -all', 'v=TLSRPTv1;rua=mailto:a@b.example'])).to.deep.equal(['mailto:a@b.example']);
  });
  it('no record, two records, no rua, or only URIs of other schemes: none', () => {
    expect(tlsrptRua([])).to.equal(null);
    expect(tlsrptRua(['v=TLSRPTv1; rua=mailto:a@b.example', 'v=TLSRPTv1; rua=mailto:c@d.example'])).to.equal(null);
    expect(tlsrptRua(['v=TLSRPTv1'])).to.equal(null);
    expect(tlsrptRua(['v=TLSRPTv1; rua=http://plain.example/,ftp://x.example/'])).to.equal(null);
    expect(tlsrptRua(['v=TLSRPTv10; rua=mailto:a@b.example'])).to.equal(null);
  });
  it('subject and file name as RFC 8460 §5.1 and §5.3 write them', () => {
    expect(tlsrptSubject('d.example', 'mta.example', 'r1')).to.equal(
      'Report Domain: d.example Submitter: mta.example Report-ID: <r1>',
    );
    expect(tlsrptFilename('mta.example', 'd.example', 1_700_000_000_000, 1_700_086_399_000)).to.equal(
      'mta.example!d.example!1700000000!1700086399.json.gz',
    );
  });
});
