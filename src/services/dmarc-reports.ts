// recordDmarcReport: one message received at dmarc@<bounce domain>. A readable aggregate report for a team's
// domain is stored once per (org_name, report_id) with its records (store/dmarc.ts); one for a domain no team holds
// is accepted and dropped; an unreadable one is kept in inbound_reports (raw capped) for the operator. Who vouches for
// the message (services/dmarc-auth.ts) is stored with it; only an authenticated report raises alerts, and one replaces
// an unauthenticated report that took its (org_name, report_id) first.
import { newId } from '../core/ids.js';
import { messagesOf, type DmarcParser, type DmarcReading, type DmarcReport } from '../core/dmarc-report.js';
import { domainsNamed, type DomainRow } from '../store/domains.js';
import { deleteDmarcReport, dmarcReportByOrgId, insertDmarcReport, type NewDmarcRecord } from '../store/dmarc.js';
import { keepForOperator } from './kept-mail.js';
import type { InboundEnvelope } from './feedback.js';
import type { Ctx } from './context.js';
import { ourIps } from './dmarc-summary.js';
import { raiseDomainAlert } from './alerts.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { reportAuth, type ReportAuth } from './dmarc-auth.js';

/** A source that is not ours failing DMARC as the domain with at least this many messages in one report is alerted. */
export const FAILING_SOURCE_MESSAGES = 10;

export type DmarcOutcome = 'stored' | 'duplicate' | 'dropped' | 'unreadable';
export interface DmarcResult {
  /** the dmr_… report (stored or duplicate), the rep_… inbound report (unreadable), null (dropped) */
  id: string | null;
  outcome: DmarcOutcome;
}
export interface DmarcReadOptions {
  parse: DmarcParser;
  /** the message's size when only its first bytes were kept */
  size?: number;
}

/**
 * The team domain a report is about: its policy domain, else the nearest parent a team holds (a report for
 * `mail.example.com` belongs to `example.com`'s holder). Among teams holding the same name, a verified domain
 * first, then the oldest.
 */
function* domainFor(ctx: Ctx, name: string): Gen<DomainRow | null> {
  const labels = name.split('.');
  for (let i = 0; i <= labels.length - 2; i++) {
    const rows = yield* domainsNamed(ctx.db, labels.slice(i).join('.'));
    if (rows.length) return rows.find((r) => r.status === 'verified') ?? (rows[0] as DomainRow);
  }
  return null;
}

function recordRows(r: DmarcReport): NewDmarcRecord[] {
  return r.records.map((row) => ({
    source_ip: row.source_ip,
    count: row.count,
    disposition: row.disposition,
    dkim_aligned: row.dkim_aligned ? 1 : 0,
    spf_aligned: row.spf_aligned ? 1 : 0,
    dmarc_pass: row.dmarc_pass ? 1 : 0,
    header_from: row.header_from,
    envelope_from: row.envelope_from,
    auth_json: JSON.stringify({ dkim: row.dkim, spf: row.spf, reasons: row.reasons, envelope_to: row.envelope_to }),
  }));
}

function* keepUnreadable(
  ctx: Ctx,
  raw: Buffer,
  env: InboundEnvelope,
  r: DmarcReading & { ok: false },
  size: number,
): Gen<DmarcResult> {
  // the shape of an unread Report (core/report.ts), plus what kept the DMARC report from being read
  const parsed = {
    kind: 'other',
    recipients: [],
    original: { message_id: null, email_id: null, return_path: null },
    error: 'dmarc',
    dmarc: { error: r.error, detail: r.detail },
  };
  const id = yield* keepForOperator(ctx, { kind: 'other', parsed, raw, env, size });
  ctx.log.warn(
    { report: id, dmarc_error: r.error, detail: r.detail },
    'DMARC report unreadable; kept for the operator',
  );
  return { id, outcome: 'unreadable' as const };
}

function* store(ctx: Ctx, r: DmarcReport, env: InboundEnvelope, auth: ReportAuth): Gen<DmarcResult> {
  const domain = yield* domainFor(ctx, r.policy.domain);
  const about = {
    org: r.org_name,
    report_id: r.report_id,
    domain: r.policy.domain,
    records: r.records.length,
    authenticated_by: auth.by,
  };
  if (!domain) {
    ctx.log.info(about, 'DMARC report for a domain no team holds: dropped');
    return { id: null, outcome: 'dropped' };
  }
  return yield* transaction(ctx.db, function* () {
    const had = yield* dmarcReportByOrgId(ctx.db, r.org_name, r.report_id);
    if (had && (had.authenticated !== 0 || !auth.authenticated)) {
      ctx.log.info({ ...about, id: had.id }, 'DMARC report already stored');
      return { id: had.id, outcome: 'duplicate' as const };
    }
    if (had) {
      ctx.log.warn({ ...about, replaced: had.id }, 'DMARC report replaces an unauthenticated one with its org and id');
      yield* deleteDmarcReport(ctx.db, had.seq);
    }
    const id = newId('dmr', ctx.now());
    yield* insertDmarcReport(
      ctx.db,
      {
        id,
        team_id: domain.team_id,
        domain_id: domain.id,
        domain: r.policy.domain,
        org_name: r.org_name,
        email: r.email,
        report_id: r.report_id,
        begin_at: r.begin * 1000,
        end_at: r.end * 1000,
        records: r.records.length,
        messages: messagesOf(r),
        schema: r.schema,
        generator: r.generator,
        policy_json: JSON.stringify(r.policy),
        errors_json: r.errors.length || r.skipped ? JSON.stringify({ errors: r.errors, skipped: r.skipped }) : null,
        remote_ip: env.remoteIp,
        received_at: ctx.now(),
        authenticated: auth.authenticated ? 1 : 0,
        authenticated_by: auth.by,
      },
      recordRows(r),
    );
    ctx.log.info({ ...about, id, team: domain.team_id }, 'DMARC report stored');
    if (auth.authenticated) yield* alertSources(ctx, domain, r, id, auth);
    else ctx.log.info({ ...about, id }, 'DMARC report not authenticated: stored, no alerts');
    return { id, outcome: 'stored' as const };
  });
}

/**
 * domain.alert for a stored, authenticated report: `dmarc_failing_source` for a source that is not ours with at least
 * FAILING_SOURCE_MESSAGES messages failing DMARC, `dmarc_own_failing` for one of our IPs whose messages aligned neither
 * DKIM nor SPF (a configuration fault). Each once per (domain, source IP) per 7 days (services/alerts.ts).
 */
function* alertSources(ctx: Ctx, domain: DomainRow, r: DmarcReport, reportId: string, auth: ReportAuth): Gen<void> {
  const ours = ourIps(ctx);
  const failing = new Map<string, { messages: number; unaligned: number }>();
  for (const row of r.records) {
    if (row.dmarc_pass) continue;
    const f = failing.get(row.source_ip) ?? { messages: 0, unaligned: 0 };
    f.messages += row.count;
    if (!row.dkim_aligned && !row.spf_aligned) f.unaligned += row.count;
    failing.set(row.source_ip, f);
  }
  const report = { id: reportId, org_name: r.org_name, report_id: r.report_id, authenticated_by: auth.by };
  for (const [ip, f] of failing) {
    const mine = ours(ip);
    if (mine ? f.unaligned === 0 : f.messages < FAILING_SOURCE_MESSAGES) continue;
    const alert = mine ? 'dmarc_own_failing' : 'dmarc_failing_source';
    const messages = mine ? f.unaligned : f.messages;
    yield* raiseDomainAlert(ctx, { alert, domain, key: ip, details: { source_ip: ip, messages, report } });
  }
}

/** Reads and records one message sent to dmarc@. Throws only on store errors (the listener answers 451). */
export async function recordDmarcReport(
  ctx: Ctx,
  raw: Buffer,
  env: InboundEnvelope,
  read: DmarcReadOptions,
): Promise<DmarcResult> {
  const size = read.size ?? raw.length;
  const reading = await read.parse(raw, size > raw.length);
  if (!reading.ok)
    return runPlan(
      ctx.db,
      transaction(ctx.db, () => keepUnreadable(ctx, raw, env, reading, size)),
    );
  const auth = await reportAuth(ctx, raw, env, reading.report.email);
  return runPlan(ctx.db, store(ctx, reading.report, env, auth));
}
