// A live accept's store work without the service around it, for tests that race the credit lock on PostgreSQL:
// the team's credit lock and balance, one email with one queued recipient, its charge (no event, no webhook).
import { ApiError } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import type { Ctx } from '../../src/services/context.js';
import { charge, prepareCharge } from '../../src/store/credits.js';
import * as emails from '../../src/store/emails.js';
import type { Gen } from '../../src/store/op.js';

export function* chargedAccept(
  ctx: Ctx,
  teamId: string,
  to: string,
  subject: string,
  freeMonthly = 0,
): Gen<{ id: string; seq: number }> {
  const now = ctx.now();
  const prepared = yield* prepareCharge(ctx.db, teamId, now);
  const id = newId('em', now);
  const row: emails.NewEmail = {
    id,
    team_id: teamId,
    test_mode: 0,
    status: 'queued',
    from_addr: 'app@acme.test',
    to_json: JSON.stringify([to]),
    cc_json: null,
    bcc_json: null,
    reply_to: null,
    subject,
    html: null,
    text: 'hello',
    tags_json: null,
    headers_json: null,
    tracking_opens: 0,
    tracking_clicks: 0,
    scheduled_at: null,
    credits_charged: 1,
    sender_domain: 'acme.test',
    created_at: now,
    updated_at: now,
    attachments_json: null,
    raw_message: 0,
  } as emails.NewEmail;
  const rcpt = { recipient: to, kind: 'to', domain: 'x.test', status: 'queued', next_attempt_at: now } as const;
  const seq = yield* emails.insertEmail(ctx.db, row, [], [rcpt as unknown as emails.NewDelivery]);
  if (!(yield* charge(ctx.db, teamId, seq, 1, freeMonthly, now, prepared)))
    throw new ApiError('insufficient_credits', 'insufficient_credits', 'not enough credits');
  return { id, seq };
}
