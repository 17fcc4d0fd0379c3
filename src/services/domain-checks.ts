// Domain checks: each domain's DNS records checked (on demand, `mta domain verify`, the scheduled job), the results and
// status stored, DKIM key promotion on a passing next key, alerts for records that broke, status-change listeners.
import type { Resolver } from 'node:dns/promises';
import { invalid, notFound } from '../core/errors.js';
import {
  normaliseDomain,
  nextDomainStatus,
  returnPathVerified,
  CHECK_KEYS,
  RETIRE_GRACE_MS,
  type CheckKey,
  type CheckOutcome,
  type DomainStatus,
} from '../core/domain-records.js';
import type { DB } from '../store/db.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import * as store from '../store/domains.js';
import type { DkimKeyRow, DomainRow } from '../store/domains.js';
import { checkAll, checkDkim } from './dns-checks.js';
import type { RecordResult } from './present-domain.js';
import { createResolver } from './resolver.js';
import type { Ctx } from './context.js';
import { raiseDomainAlert } from './alerts.js';
import { owned, present, spfSettings } from './domains.js';

export interface DomainStatusChange {
  domain: DomainRow;
  from: DomainStatus;
  to: DomainStatus;
  at: number;
}
export type DomainStatusListener = (db: DB, change: DomainStatusChange) => void;
const listeners = new WeakMap<DB, DomainStatusListener[]>();

/** Registers a function called (inside the writing transaction) whenever a domain's status changes. */
export function onDomainStatusChange(db: DB, fn: DomainStatusListener): void {
  listeners.set(db, [...(listeners.get(db) ?? []), fn]);
}

/** The resolver domain checks use: MTA_DNS_SERVERS with the MTA_DNS_CHECK_TIMEOUT_SECONDS time-out. */
export function checkResolver(ctx: Pick<Ctx, 'config'>): Resolver {
  return createResolver(ctx.config, {
    timeoutMs: Math.max(1, Math.round(ctx.config.dnsCheckTimeoutSeconds * 1000)),
    tries: 2,
  });
}

function nextResults(
  prev: Partial<Record<CheckKey, RecordResult>>,
  outcomes: Record<CheckKey, CheckOutcome>,
): Record<CheckKey, RecordResult> {
  const out = {} as Record<CheckKey, RecordResult>;
  for (const p of CHECK_KEYS) {
    const o = outcomes[p];
    if (o.result === 'pass') out[p] = { status: 'verified', found: o.found };
    else if (o.result === 'fail') out[p] = { status: 'failed', found: o.found, error: o.error };
    else out[p] = { status: prev[p]?.status ?? 'pending', found: prev[p]?.found ?? null, error: o.error };
  }
  return out;
}

/** Checks one domain's records (and its Ed25519 / next DKIM keys) now and stores the results; null if deleted meanwhile. */
export async function checkDomain(
  ctx: Ctx,
  id: string,
  resolver: Resolver = checkResolver(ctx),
): Promise<DomainRow | null> {
  const d = await runPlan(ctx.db, store.domainById(ctx.db, id));
  if (!d) return null;
  const target = {
    name: d.name,
    dkimName: `${d.dkim_selector}._domainkey.${d.name}`,
    publicKey: d.dkim_public_key,
    returnPath: d.return_path ?? `bounces.${d.name}`,
  };
  const keys = (await runPlan(ctx.db, store.dkimKeys(ctx.db, id))).filter((k) => k.role !== 'retiring');
  const spf = await runPlan(ctx.db, spfSettings(ctx, d.team_id));
  const [outcomes, keyOutcomes] = await Promise.all([
    checkAll(resolver, target, spf),
    Promise.all(
      keys.map((k) =>
        checkDkim(resolver, { ...target, dkimName: `${k.selector}._domainkey.${d.name}`, publicKey: k.public_key }),
      ),
    ),
  ]);
  return runPlan(
    ctx.db,
    transaction(ctx.db, () => writeResults(ctx, d, keys, outcomes, keyOutcomes)),
  );
}

/** checkDomain's transaction: the outcomes stored, alerts raised and status listeners called; the row after. */
function* writeResults(
  ctx: Ctx,
  d: DomainRow,
  keys: DkimKeyRow[],
  outcomes: Record<CheckKey, CheckOutcome>,
  keyOutcomes: CheckOutcome[],
): Gen<DomainRow | null> {
  const id = d.id;
  const fresh = yield* store.domainById(ctx.db, id);
  if (!fresh || fresh.dkim_selector !== d.dkim_selector) return fresh ?? null; // deleted, or another check switched keys
  const at = ctx.now();
  const prev: Partial<Record<CheckKey, RecordResult>> = fresh.records_json ? JSON.parse(fresh.records_json) : {};
  const promoted = yield* applyKeyChecks(ctx, fresh, keys, keyOutcomes, prev.dkim?.status ?? 'pending', at);
  if (promoted) {
    outcomes.dkim = promoted;
    delete prev.dkim;
  }
  yield* store.dropRetiredKeys(ctx.db, id, at);
  const results = nextResults(prev, outcomes);
  const status = nextDomainStatus(fresh.status, outcomes);
  // the inbound MX is checked always, but its DNS trouble is news only for a receiving domain
  const shown = CHECK_KEYS.filter((p) => p !== 'inbound_mx' || fresh.receiving === 1);
  const errors = shown
    .filter((p) => results[p].error && outcomes[p].result === 'error')
    .map((p) => `${p}: ${results[p].error}`);
  yield* store.writeCheck(ctx.db, {
    id,
    status,
    records_json: JSON.stringify(results),
    return_path_verified: returnPathVerified(results) ? 1 : 0,
    last_error: errors.join(' ') || null,
    last_checked_at: at,
  });
  const row = (yield* store.domainById(ctx.db, id))!;
  if (fresh.status === 'verified') yield* alertBroken(ctx, row, prev, results);
  if (status !== fresh.status) statusChanged(ctx, { domain: row, from: fresh.status, to: status, at }, results);
  return row;
}

/**
 * Stores the Ed25519 / next keys' check results (inside the check's transaction). When the next key's
 * record passes, it becomes the current key (the old one retiring) and its outcome is answered.
 */
function* applyKeyChecks(
  ctx: Ctx,
  d: DomainRow,
  keys: DkimKeyRow[],
  outcomes: CheckOutcome[],
  currentStatus: DomainStatus,
  at: number,
): Gen<CheckOutcome | null> {
  let promoted: CheckOutcome | null = null;
  for (const [i, k] of keys.entries()) {
    const o = outcomes[i];
    const r =
      o.result === 'pass'
        ? { status: 'verified' as const, found: o.found, error: null }
        : o.result === 'fail'
          ? { status: 'failed' as const, found: o.found, error: o.error }
          : { status: k.status, found: k.found, error: o.error };
    yield* store.writeKeyCheck(ctx.db, k.id, r);
    if (k.role !== 'next' || o.result !== 'pass') continue;
    if (!(yield* store.promoteNextKey(ctx.db, d, k.id, currentStatus, at, at + RETIRE_GRACE_MS))) continue;
    promoted = o;
    ctx.log.info(
      { domain: d.name, id: d.id, team: d.team_id, selector: k.selector, retiring: d.dkim_selector },
      `domain ${d.name} now signs with DKIM selector ${k.selector}`,
    );
  }
  return promoted;
}

/** domain.alert dns_record_broken for each record of a verified domain that passed before and fails now. */
function* alertBroken(
  ctx: Ctx,
  d: DomainRow,
  prev: Partial<Record<CheckKey, RecordResult>>,
  results: Record<CheckKey, RecordResult>,
): Gen<void> {
  for (const p of CHECK_KEYS) {
    if (prev[p]?.status !== 'verified' || results[p].status !== 'failed') continue;
    const details = { record: p, found: results[p].found, error: results[p].error ?? null };
    yield* raiseDomainAlert(ctx, { alert: 'dns_record_broken', domain: d, key: p, details });
  }
}

function statusChanged(ctx: Ctx, change: DomainStatusChange, results: Record<CheckKey, RecordResult>) {
  const failing = CHECK_KEYS.filter((p) => results[p].status === 'failed');
  const level = change.to === 'failed' ? 'warn' : 'info';
  ctx.log[level](
    {
      domain: change.domain.name,
      id: change.domain.id,
      team: change.domain.team_id,
      from: change.from,
      to: change.to,
      failing,
    },
    `domain ${change.domain.name} is now ${change.to}`,
  );
  for (const fn of listeners.get(ctx.db) ?? []) fn(ctx.db, change);
}

/** POST /domains/{id}/verify: re-check now and answer the record. */
export async function verifyDomain(ctx: Ctx, teamId: string, id: string, resolver?: Resolver) {
  await runPlan(ctx.db, owned(ctx, teamId, id));
  const row = await checkDomain(ctx, id, resolver);
  if (!row) throw notFound('domain');
  return runPlan(ctx.db, present(ctx, row));
}

/** `mta domain verify NAME`: re-checks every team's domain of that name; answers the oldest. */
export async function verifyDomainByName(ctx: Ctx, rawName: string) {
  const name = normaliseDomain(rawName);
  if (!name) throw invalid('name', 'name must be a domain name such as example.com.');
  const rows = await runPlan(ctx.db, store.domainsNamed(ctx.db, name));
  if (!rows.length) throw notFound('domain');
  const resolver = checkResolver(ctx);
  const checked = [];
  for (const r of rows) checked.push(await checkDomain(ctx, r.id, resolver));
  const first = checked.find((r): r is DomainRow => !!r);
  if (!first) throw notFound('domain');
  return runPlan(ctx.db, present(ctx, first));
}

/** The scheduled job: re-checks every domain (pending, verified, failed), a few at a time. */
export async function checkAllDomains(
  ctx: Ctx,
  resolver: Resolver = checkResolver(ctx),
  concurrency = 4,
): Promise<number> {
  const ids = await runPlan(ctx.db, store.allDomainIds(ctx.db));
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      try {
        await checkDomain(ctx, id, resolver);
      } catch (err) {
        ctx.log.error({ err, id }, 'domain check failed');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
  return ids.length;
}
