// Mailbox providers' own current rejection texts (test/fixtures/synthetic/provider-texts.json, each with its source):
// read as a live SMTP reply from the provider's MX host (outbound/outcome.ts readReply) and inside a Postfix DSN (parseReport), never hard, with the provider named.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';
import { readReply } from '../../src/outbound/outcome.js';

interface ProviderText {
  provider: string;
  host: string;
  line: string;
  /** the reason of the live reply, and of the DSN unless `dsn` says otherwise */
  reason: string;
  dsn?: string;
  source: string;
}
const texts = JSON.parse(
  readFileSync(new URL('../fixtures/synthetic/provider-texts.json', import.meta.url), 'utf8'),
) as ProviderText[];

/** A Postfix-style DSN carrying the reply, as a relay would return it. */
function dsn(t: ProviderText): string {
  const status = /\b[245]\.\d{1,3}\.\d{1,3}\b/.exec(t.line)?.[0] ?? `${t.line[0]}.0.0`;
  return [
    'From: MAILER-DAEMON@mx.example.org (Mail Delivery System)',
    'To: sender@example.org',
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    'This is the mail system at host mx.example.org.',
    '',
    `<rcpt@example.net>: host ${t.host}[192.0.2.80] said: ${t.line} (in reply to RCPT TO command)`,
    '',
    '--b',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; mx.example.org',
    '',
    'Final-Recipient: rfc822; rcpt@example.net',
    'Action: failed',
    `Status: ${status}`,
    `Remote-MTA: dns; ${t.host}`,
    `Diagnostic-Code: smtp; ${t.line}`,
    '',
    '--b--',
    '',
  ].join('\r\n');
}

describe("providers' own rejection texts", () => {
  it('covers Microsoft, Google and Yahoo, each text with its source', () => {
    for (const p of ['microsoft', 'google', 'yahoo'])
      expect(
        texts.some((t) => t.provider === p),
        p,
      ).to.equal(true);
    for (const t of texts) expect(t.source, t.line).to.match(/^https:\/\//);
  });
  for (const t of texts) {
    it(`${t.provider}: ${t.line.slice(0, 60)} → ${t.reason}`, async () => {
      // as the delivery loop reads it, from the provider's MX host
      const live = readReply(t.line, 'RCPT', t.host);
      expect(live).to.deep.equal({ reason: t.reason, hard: false });
      const report = await parseReport(dsn(t));
      expect(report.recipients).to.have.length(1);
      const r = report.recipients[0];
      expect(r.reason).to.equal(t.dsn ?? t.reason);
      expect(r.hard).to.equal(false);
      expect(r.provider).to.equal(t.provider);
    });
  }
});
