// Pairing a report's recipients with an email's deliveries: a verified VERP token acts on its own
// delivery only (by Final- or Original-Recipient), never on another recipient; Message-ID alone acts
// on nothing unless trusted, and then only on deliveries named exactly, each once.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { matchRecipients, type RecipientMatch } from '../../src/services/feedback-match.js';
import { emailByPublicId, deliveriesOf, type EmailRow, type DeliveryRow } from '../../src/store/emails.js';
import type { Report, ReportRecipient } from '../../src/inbound/parse.js';
import { runSync } from '../../src/store/op.js';

const rcpt = (address: string | null, original?: string): ReportRecipient => ({
  address,
  status: '5.1.1',
  action: 'failed',
  reason: 'userunknown',
  hard: true,
  diagnostic: null,
  ...(original ? { original_recipient: original } : {}),
});
const report = (recipients: ReportRecipient[]): Report => ({
  kind: 'dsn',
  recipients,
  original: { message_id: null, email_id: null, return_path: null },
});

describe('matching report recipients to deliveries', () => {
  let s: TestService;
  let email: EmailRow;
  let ds: DeliveryRow[];
  before(async () => {
    s = await startTestService({ features: [] });
    const key = s.key(s.team().id);
    const sent = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@x.test', to: ['Bob@Example.test', 'carol@example.test'], subject: 's', text: 't' },
    });
    email = runSync(emailByPublicId(s.db, sent.body.id))!;
    ds = runSync(deliveriesOf(s.db, email.seq));
  });
  after(() => s.close());
  const match = (...a: Parameters<typeof matchRecipients>) => runSync(matchRecipients(...a));
  const pairs = (m: RecipientMatch[]) => m.map((x) => [x.recipient.address, x.delivery?.recipient ?? null, x.exact]);

  it('a verified token: its own delivery, exact match first, whatever the order; another recipient is never touched', () => {
    const bob = { email, by: 'rcpt' as const, deliveryId: ds[0].id };
    expect(
      pairs(
        match(
          s.ctx,
          bob,
          report([
            rcpt('forward@elsewhere.test'),
            rcpt('carol@example.test'),
            rcpt('bob@example.test'),
            rcpt('BOB@example.test'),
          ]),
        ),
      ),
    ).to.deep.equal([
      ['forward@elsewhere.test', null, false],
      ['carol@example.test', null, false],
      ['bob@example.test', 'Bob@example.test', true],
      ['BOB@example.test', null, false],
    ]);
    expect(pairs(match(s.ctx, bob, report([rcpt('carol@example.test')])))).to.deep.equal([
      ['carol@example.test', null, false],
    ]);
    expect(pairs(match(s.ctx, bob, report([rcpt('forward@elsewhere.test')])))).to.deep.equal([
      ['forward@elsewhere.test', 'Bob@example.test', false],
    ]);
    expect(pairs(match(s.ctx, bob, report([rcpt(null)])))).to.deep.equal([[null, 'Bob@example.test', false]]);
    // Postfix alias: Final-Recipient is the forward target, Original-Recipient ours.
    expect(pairs(match(s.ctx, bob, report([rcpt('dead@elsewhere.test', 'bob@example.test')])))).to.deep.equal([
      ['dead@elsewhere.test', 'Bob@example.test', true],
    ]);
  });

  it('Message-ID only: nothing unless trusted; trusted takes exact names only, each delivery once', () => {
    const m = { email, by: 'message_id' as const, deliveryId: null };
    const r = report([rcpt('carol@example.test'), rcpt(null), rcpt('CAROL@example.test'), rcpt('x@elsewhere.test')]);
    expect(match(s.ctx, m, r).every((x) => x.delivery === null)).to.equal(true);
    expect(pairs(match(s.ctx, m, r, true))).to.deep.equal([
      ['carol@example.test', 'carol@example.test', true],
      [null, null, false],
      ['CAROL@example.test', null, false],
      ['x@elsewhere.test', null, false],
    ]);
  });
});
