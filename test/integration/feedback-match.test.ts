// Pairing a report's recipients with an email's deliveries: exact address matches win over the
// single-delivery fallback, whatever their order in the report, and a delivery is taken once.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { matchRecipients } from '../../src/services/feedback-match.js';
import { emailByPublicId } from '../../src/store/emails.js';
import type { Report, ReportRecipient } from '../../src/inbound/parse.js';

const rcpt = (address: string | null): ReportRecipient => ({ address, status: '5.1.1', action: 'failed', reason: 'userunknown', hard: true, diagnostic: null });

describe('matching report recipients to deliveries', () => {
  let s: TestService;
  before(async () => { s = await startTestService({ features: [] }); });
  after(() => s.close());

  it('an exact match later in the report is not pre-empted by the fallback; duplicates match once', async () => {
    const key = s.key(s.team().id);
    const sent = await s.api('POST', '/v1/emails', { key, body: { from: 'a@x.test', to: 'Bob@Example.test', subject: 's', text: 't' } });
    const email = emailByPublicId(s.db, sent.body.id)!;
    const report: Report = { kind: 'dsn', recipients: [rcpt('forward@elsewhere.test'), rcpt('bob@example.test'), rcpt('BOB@example.test')], original: { message_id: null, email_id: null, return_path: null } };
    const m = matchRecipients(s.ctx, { email, by: 'rcpt', verified: true }, report);
    expect(m.map((x) => [x.recipient.address, x.delivery?.recipient ?? null, x.exact])).to.deep.equal([
      ['forward@elsewhere.test', null, false],
      ['bob@example.test', 'Bob@example.test', true],
      ['BOB@example.test', null, true],
    ]);
    const alone = matchRecipients(s.ctx, { email, by: 'rcpt', verified: true }, { ...report, recipients: [rcpt(null)] });
    expect(alone[0].delivery?.recipient).to.equal('Bob@example.test');
    expect(alone[0].exact).to.equal(false);
  });
});
