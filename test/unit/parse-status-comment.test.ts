// A DSN's "Status: 4.0.0 (comment)": Sisimai 5.1.0's RFC 3464 decoder never reads the comment; go-sisimai does, and the
// 706 samples only rest on it in PowerMTA's DSNs (src/inbound/dsn.ts, dsnRecipient).
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { genericDsn } from '../helpers/generic-dsn.js';

const dsn = genericDsn;

describe('parseReport: a Status field’s comment', () => {
  it('is not error text in a generic DSN: a delayed recipient with no Diagnostic-Code reads expired', async () => {
    const r = await parseReport(
      dsn([
        'Final-Recipient: rfc822;bo@mx.example.net',
        'Action: delayed',
        'Status: 4.0.0 (mx.example.net: host name lookup failure)',
      ]),
    );
    expect(r.recipients.map((x) => [x.address, x.reason, x.hard])).to.deep.equal([
      ['bo@mx.example.net', 'expired', false],
    ]);
  });
  it('is error text in a PowerMTA DSN (X-PowerMTA-* fields): "mailbox disabled" reads suspend', async () => {
    const r = await parseReport(
      dsn([
        'Final-Recipient: rfc822;cy@example.net',
        'Action: failed',
        'Status: 5.2.1 (mailbox disabled, not accepting messages)',
        'Remote-MTA: dns;mx.example.net (192.0.2.7)',
        'Diagnostic-Code: smtp;550 5.2.1 <cy@example.net>... User Unknown',
        'X-PowerMTA-BounceCategory: bad-mailbox',
      ]),
    );
    expect(r.recipients.map((x) => [x.address, x.reason])).to.deep.equal([['cy@example.net', 'suspend']]);
  });
});
