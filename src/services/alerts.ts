// Domain and IP alerts as events (decisions.md "Domain and IP alerts"): `ip.alert` (listed, delisted, no_fcrdns)
// goes to the live endpoints subscribed to it of every team whose pool holds the IP; `domain.alert`
// (dmarc_failing_source, dmarc_own_failing, dns_record_broken) to the domain's team's live endpoints subscribed to
// it. Both also go to the operator's MTA_ALERT_WEBHOOK_URL (the operator_alerts outbox, posted by
// the webhook dispatcher) and to the log. Each subject (alert kind and what it is about) is announced at most once
// per ALERT_WINDOW_MS (store ip_alerts). Alerts are live-mode events: test endpoints never receive them.
import { newId } from '../core/ids.js';
import type { AlertEventType } from '../core/status.js';
import { claimAlert } from '../store/ip-health.js';
import { retryDelayMs, verdictOf, type AttemptVerdict } from '../core/webhook-retry.js';
import * as alerts from '../store/alerts.js';
import { queueOutboxRow } from '../store/webhooks.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import { iso } from './present.js';
import type { Ctx } from './context.js';

export type OperatorAlertRow = alerts.OperatorAlertRow;
export const ALERT_WINDOW_MS = 7 * 24 * 3600 * 1000;

export type IpAlertKind = 'listed' | 'delisted' | 'no_fcrdns';
export type DomainAlertKind = 'dmarc_failing_source' | 'dmarc_own_failing' | 'dns_record_broken';

export interface IpAlert {
  alert: IpAlertKind;
  ip: string;
  pool: string;
  details: Record<string, unknown>;
  /** What makes two alerts the same subject besides the IP and kind (the zone of a listing). */
  key?: string;
}
export interface DomainAlert {
  alert: DomainAlertKind;
  domain: { id: string; name: string; team_id: string };
  details: Record<string, unknown>;
  /** What makes two alerts the same subject besides the domain and kind (the source IP, the record). */
  key?: string;
}

/** Whether a team (id, name) sends from `ip`: its MTA_IP_POOLS entry (by id, else name), else MTA_SENDING_IPS. */
function teamSendsFrom(ctx: Ctx, team: { team_id: string; team_name: string }, ip: string): boolean {
  const pools = ctx.config.ipPools;
  const ips = Object.hasOwn(pools, team.team_id)
    ? pools[team.team_id]
    : Object.hasOwn(pools, team.team_name)
      ? pools[team.team_name]
      : ctx.config.sendingIps;
  return ips.includes(ip);
}

/** Writes one alert event (if its subject was not announced within the window); true when it was. */
function* raise(
  ctx: Ctx,
  type: AlertEventType,
  subject: string,
  data: Record<string, unknown>,
  teamEndpoints: (kind: string) => Gen<number[]>,
): Gen<boolean> {
  const now = ctx.now();
  const id = newId('evt', now);
  const payload = JSON.stringify({ id, object: 'event', type, created_at: iso(now), data });
  const sent = yield* transaction(ctx.db, function* () {
    if (!(yield* claimAlert(ctx.db, subject, now, ALERT_WINDOW_MS))) return false;
    for (const seq of yield* teamEndpoints(type))
      yield* queueOutboxRow(ctx.db, {
        id: newId('whd', now),
        endpoint_seq: seq,
        event_id: id,
        event_type: type,
        payload,
        next_attempt_at: now,
        created_at: now,
      });
    if (ctx.config.alertWebhookUrl) yield* alerts.insertOperatorAlert(ctx.db, id, payload, now);
    return true;
  });
  if (sent) ctx.log.warn({ event: type, id, ...data }, `${type} ${String(data.alert)}`);
  return sent;
}

export function raiseIpAlert(ctx: Ctx, a: IpAlert): Gen<boolean> {
  const subject = ['ip', a.ip, a.alert, a.key ?? ''].join(' ');
  const data = { alert: a.alert, ip: { ip: a.ip, pool: a.pool }, details: a.details };
  return raise(ctx, 'ip.alert', subject, data, function* (kind) {
    return (yield* alerts.liveEndpointsFor(ctx.db, kind)).filter((e) => teamSendsFrom(ctx, e, a.ip)).map((e) => e.seq);
  });
}

export function raiseDomainAlert(ctx: Ctx, a: DomainAlert): Gen<boolean> {
  const subject = ['domain', a.domain.id, a.alert, a.key ?? ''].join(' ');
  const data = { alert: a.alert, domain: { id: a.domain.id, name: a.domain.name }, details: a.details };
  return raise(ctx, 'domain.alert', subject, data, function* (kind) {
    return (yield* alerts.liveEndpointsFor(ctx.db, kind))
      .filter((e) => e.team_id === a.domain.team_id)
      .map((e) => e.seq);
  });
}

/** Ended operator alert rows are kept this long. */
const OPERATOR_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** Claims up to `limit` due operator alerts under a lease of `leaseMs`. */
export const operatorAlertsDue = (ctx: Ctx, limit: number, leaseMs: number): Promise<alerts.OperatorAlertRow[]> =>
  runPlan(
    ctx.db,
    transaction(ctx.db, () => alerts.claimOperatorAlerts(ctx.db, ctx.now(), ctx.now() + leaseMs, limit)),
  );

/** One POST's result (webhooks/post.ts PostResult): ends the row, schedules the next attempt, or releases it. */
export const recordOperatorAlert = (
  ctx: Ctx,
  row: { seq: number; attempts: number },
  r: { statusCode: number | null; error: string | null; blocked: boolean; aborted: boolean },
): Promise<AttemptVerdict | 'released'> => runPlan(ctx.db, recordOperatorPlan(ctx, row, r));
function* recordOperatorPlan(
  ctx: Ctx,
  row: { seq: number; attempts: number },
  r: { statusCode: number | null; error: string | null; blocked: boolean; aborted: boolean },
): Gen<AttemptVerdict | 'released'> {
  const now = ctx.now();
  if (r.aborted) {
    yield* alerts.releaseOperatorAlert(ctx.db, row.seq, now);
    return 'released';
  }
  let verdict: AttemptVerdict = r.blocked ? 'failed' : verdictOf(r.statusCode);
  const delay = verdict === 'retry' ? retryDelayMs(row.attempts + 1, ctx.config.webhookRetryMinSeconds) : null;
  if (verdict === 'retry' && delay === null) verdict = 'failed';
  const error = verdict === 'succeeded' ? null : (r.error ?? `HTTP ${r.statusCode}`);
  yield* alerts.recordOperatorAttempt(ctx.db, row.seq, error, delay === null ? null : now + delay, now);
  return verdict;
}

export const pruneOperatorAlertRows = (ctx: Ctx): Promise<number> =>
  runPlan(ctx.db, alerts.pruneOperatorAlerts(ctx.db, ctx.now() - OPERATOR_RETENTION_MS));
