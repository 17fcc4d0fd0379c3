// Retention policy: idempotency records live 24 hours, inbound reports 30 days, an email's content (bodies,
// attachments, raw reports about it) MTA_CONTENT_RETENTION_DAYS (30) after the email is final, a test email's
// MTA_TEST_CONTENT_RETENTION_HOURS (24), received mail's raw copy and attachments MTA_INBOUND_RETENTION_HOURS (72),
// hourly statistics MTA_STATS_RETENTION_DAYS (400), a recipient domain's last site 90 days after its last delivery.
// One pass deletes what has expired (in small batches) and says how many rows each table lost (`content`,
// `test_content`: emails whose content went).
import { IDEMPOTENCY_TTL_MS } from '../store/idempotency.js';
import { purgeContentBefore, purgeIdempotencyBefore, purgeInboundReportsBefore } from '../store/retention.js';
import { purgeInboundContentBefore } from '../store/inbound-emails.js';
import { transaction, type Gen } from '../store/op.js';
import { runLocking } from '../store/pg/plan-driver.js';
import { pruneDomainSites, pruneTeamStats } from '../store/stats.js';
import { allTeamIds } from '../store/teams.js';
import type { Ctx } from './context.js';
import { pruneTlsReportsPlan } from './tls-reports.js';

export const INBOUND_REPORT_TTL_MS = 30 * 24 * 3600 * 1000;
const DAY_MS = 24 * 3600 * 1000;
const HOUR_MS = 3600 * 1000;

export interface RetentionPass {
  idempotency: number;
  inbound_reports: number;
  content: number;
  test_content: number;
  /** received mail (docs/receiving.md) whose raw copy and attachment bytes went (MTA_INBOUND_RETENTION_HOURS) */
  inbound_content: number;
  /** TLS report counters and sent marks older than TLS_REPORT_KEEP_DAYS (services/tls-reports.ts) */
  tls_reports: number;
  /** hourly counters (stats_hourly, site_stats_hourly) older than MTA_STATS_RETENTION_DAYS (400) */
  stats: number;
  /** recipient domains' last site (domain_sites) not delivered to for DOMAIN_SITE_KEEP_DAYS */
  domain_sites: number;
}

/** A recipient domain's site is kept this long after its mail was last delivered (services/site-stats.ts). */
export const DOMAIN_SITE_KEEP_DAYS = 90;
const BATCH = 5000;

/** One retention pass; returns how many rows each table lost. */
// PostgreSQL: on the pool (its deletes of emails' content and of domain sites may meet rows a result batch there
// holds; plan-driver.ts runLocking); its deletes commit without waiting for the WAL flush (a crash may bring a row
// back, which the next pass deletes).
export const runRetention = (ctx: Ctx): Promise<RetentionPass> =>
  runLocking(ctx.db, retentionPass(ctx), { durable: false });

function* retentionPass(ctx: Ctx): Gen<RetentionPass> {
  const now = ctx.now();
  const live = (ctx.config.contentRetentionDays ?? 30) * DAY_MS;
  const test = (ctx.config.testContentRetentionHours ?? 24) * HOUR_MS;
  return {
    idempotency: yield* purgeIdempotencyBefore(ctx.db, now - IDEMPOTENCY_TTL_MS),
    inbound_reports: yield* purgeInboundReportsBefore(ctx.db, now - INBOUND_REPORT_TTL_MS),
    content: yield* purgeContentBefore(ctx.db, false, now - live, now),
    test_content: yield* purgeContentBefore(ctx.db, true, now - test, now),
    inbound_content: yield* purgeInboundContentBefore(
      ctx.db,
      now - (ctx.config.inboundRetentionHours ?? 72) * HOUR_MS,
      now,
    ),
    tls_reports: yield* pruneTlsReportsPlan(ctx),
    stats: yield* pruneStats(ctx, now - (ctx.config.statsRetentionDays ?? 400) * DAY_MS),
    domain_sites: yield* pruneDomainSitesBefore(ctx, now - DOMAIN_SITE_KEEP_DAYS * DAY_MS),
  };
}

/** Every team's counters of both modes from before the UTC hour `before` falls in. */
function* pruneStats(ctx: Ctx, before: number): Gen<number> {
  const beforeHour = Math.floor(before / HOUR_MS) * HOUR_MS;
  let total = 0;
  for (const teamId of yield* allTeamIds(ctx.db))
    for (const mode of [0, 1]) total += yield* pruneTeamStats(ctx.db, teamId, mode, beforeHour);
  return total;
}

function* pruneDomainSitesBefore(ctx: Ctx, before: number): Gen<number> {
  let total = 0;
  for (;;) {
    const n = yield* transaction(ctx.db, () => pruneDomainSites(ctx.db, before, BATCH));
    total += n;
    if (n < BATCH) return total;
  }
}
