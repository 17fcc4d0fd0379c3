// A message the inbound listener keeps for the operator without acting on it (an unreadable DMARC report, mail to
// postmaster@): one inbound_reports row, outcome `ignored`, raw capped at RAW_CAP; `mta reports list` / `show`.
import { newId } from '../core/ids.js';
import { insertInboundReport, type InboundReportRow } from '../store/inbound-reports.js';
import type { Gen } from '../store/op.js';
import { RAW_CAP, type InboundEnvelope } from './feedback.js';
import type { Ctx } from './context.js';

export function* keepForOperator(
  ctx: Ctx,
  m: { kind: InboundReportRow['kind']; parsed: object; raw: Buffer; env: InboundEnvelope; size: number },
): Gen<string> {
  const id = newId('rep', ctx.now());
  yield* insertInboundReport(ctx.db, {
    id,
    kind: m.kind,
    outcome: 'ignored',
    team_id: null,
    email_seq: null,
    email_id: null,
    matched_by: null,
    report_message_id: null,
    mail_from: m.env.mailFrom,
    rcpt_to: m.env.rcptTo.join(','),
    remote_ip: m.env.remoteIp,
    parsed_json: JSON.stringify(m.parsed),
    raw_size: m.size,
    raw: m.raw.subarray(0, RAW_CAP),
    raw_truncated: m.raw.length > RAW_CAP ? 1 : 0,
    created_at: ctx.now(),
  });
  return id;
}
