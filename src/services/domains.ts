// Sending domains: add (generate the DKIM key, return the DNS records), check, list, delete.
// The private key stays in the store; only presentDomain's output leaves this module.
import { generateKeyPair, randomBytes } from 'node:crypto';
import type { Resolver } from 'node:dns/promises';
import { invalid, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { normaliseDomain, selectorFor, nextDomainStatus, PURPOSES, type CheckOutcome, type DomainStatus, type Purpose } from '../core/domain-records.js';
import { tx, type DB } from '../store/db.js';
import * as store from '../store/domains.js';
import type { DomainRow } from '../store/domains.js';
import { checkAll } from './dns-checks.js';
import { presentDomain, type RecordResult } from './present-domain.js';
import { createResolver } from './resolver.js';
import { decodeCursor, page } from './emails.js';
import type { Ctx } from './context.js';

export { presentDomain };

function rsaKeyPair(): Promise<{ publicKey: string; privateKey: string }> {
  return new Promise((resolve, reject) => generateKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  }, (err, pub, priv) => (err ? reject(err) : resolve({ publicKey: pub.toString('base64'), privateKey: priv }))));
}

const exists = (name: string) => invalid('name', `The domain ${name} is already added to this team.`, 'domain_exists');

/** Adds a domain to a team with a fresh RSA-2048 DKIM key; answers the record with the DNS records to publish. */
export async function addDomain(ctx: Ctx, teamId: string, rawName: unknown) {
  const name = typeof rawName === 'string' ? normaliseDomain(rawName) : null;
  if (!name) throw invalid('name', 'name must be a domain name such as example.com.');
  if (store.domainByName(ctx.db, teamId, name)) throw exists(name);
  const { publicKey, privateKey } = await rsaKeyPair();
  const now = ctx.now();
  const row = {
    id: newId('dom', now), team_id: teamId, name, created_at: now,
    dkim_selector: selectorFor(now, randomBytes(3).toString('hex').slice(0, 4)), dkim_algorithm: 'rsa',
    dkim_private_key: privateKey, dkim_public_key: publicKey, return_path: `bounces.${name}`, records_json: null,
  };
  try {
    tx(ctx.db, () => store.insertDomain(ctx.db, row));
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw exists(name);
    throw err;
  }
  ctx.log.info({ domain: name, id: row.id, team: teamId, selector: row.dkim_selector }, 'domain added');
  return presentDomain(store.domainById(ctx.db, row.id)!, ctx.config);
}

function owned(ctx: Ctx, teamId: string, id: string): DomainRow {
  const d = store.domainById(ctx.db, id);
  if (!d || d.team_id !== teamId) throw notFound('domain');
  return d;
}

export function getDomain(ctx: Ctx, teamId: string, id: string) {
  return presentDomain(owned(ctx, teamId, id), ctx.config);
}

export function listDomains(ctx: Ctx, teamId: string, limit: number, cursor?: string) {
  const rows = store.listDomains(ctx.db, teamId, decodeCursor(ctx.db, 'dom', cursor), limit);
  return page(ctx.db, 'dom', rows, limit, (r) => presentDomain(r, ctx.config));
}

/** Removes a domain: live sends from it are refused at once, and queued mail is no longer signed with its key. */
export function deleteDomain(ctx: Ctx, teamId: string, id: string) {
  const d = owned(ctx, teamId, id);
  store.deleteDomain(ctx.db, d.id);
  ctx.log.info({ domain: d.name, id: d.id, team: teamId }, 'domain deleted');
  return { object: 'domain' as const, id: d.id, name: d.name, deleted: true };
}

// ---- checks and status changes ----

export interface DomainStatusChange { domain: DomainRow; from: DomainStatus; to: DomainStatus; at: number }
export type DomainStatusListener = (db: DB, change: DomainStatusChange) => void;
const listeners = new WeakMap<DB, DomainStatusListener[]>();

/** Registers a function called (inside the writing transaction) whenever a domain's status changes. */
export function onDomainStatusChange(db: DB, fn: DomainStatusListener): void {
  listeners.set(db, [...(listeners.get(db) ?? []), fn]);
}

/** The resolver domain checks use: MTA_DNS_SERVERS with the MTA_DNS_CHECK_TIMEOUT_SECONDS time-out. */
export function checkResolver(ctx: Pick<Ctx, 'config'>): Resolver {
  return createResolver(ctx.config, { timeoutMs: Math.max(1, Math.round(ctx.config.dnsCheckTimeoutSeconds * 1000)), tries: 2 });
}

function nextResults(prev: Partial<Record<Purpose, RecordResult>>, outcomes: Record<Purpose, CheckOutcome>): Record<Purpose, RecordResult> {
  const out = {} as Record<Purpose, RecordResult>;
  for (const p of PURPOSES) {
    const o = outcomes[p];
    if (o.result === 'pass') out[p] = { status: 'verified', found: o.found };
    else if (o.result === 'fail') out[p] = { status: 'failed', found: o.found, error: o.error };
    else out[p] = { status: prev[p]?.status ?? 'pending', found: prev[p]?.found ?? null, error: o.error };
  }
  return out;
}

/** Checks one domain's records now and stores the results; null if the domain was deleted meanwhile. */
export async function checkDomain(ctx: Ctx, id: string, resolver: Resolver = checkResolver(ctx)): Promise<DomainRow | null> {
  const d = store.domainById(ctx.db, id);
  if (!d) return null;
  const target = { name: d.name, dkimName: `${d.dkim_selector}._domainkey.${d.name}`, publicKey: d.dkim_public_key, returnPath: d.return_path ?? `bounces.${d.name}` };
  const outcomes = await checkAll(resolver, target, ctx.config);
  return tx(ctx.db, () => {
    const fresh = store.domainById(ctx.db, id);
    if (!fresh) return null;
    const results = nextResults(fresh.records_json ? JSON.parse(fresh.records_json) : {}, outcomes);
    const status = nextDomainStatus(fresh.status, outcomes);
    const errors = PURPOSES.filter((p) => results[p].error && outcomes[p].result === 'error').map((p) => `${p}: ${results[p].error}`);
    const at = ctx.now();
    store.writeCheck(ctx.db, { id, status, records_json: JSON.stringify(results), return_path_verified: results.return_path.status === 'verified' ? 1 : 0, last_error: errors.join(' ') || null, last_checked_at: at });
    const row = store.domainById(ctx.db, id)!;
    if (status !== fresh.status) statusChanged(ctx, { domain: row, from: fresh.status, to: status, at }, results);
    return row;
  });
}

function statusChanged(ctx: Ctx, change: DomainStatusChange, results: Record<Purpose, RecordResult>) {
  const failing = PURPOSES.filter((p) => results[p].status === 'failed');
  const level = change.to === 'failed' ? 'warn' : 'info';
  ctx.log[level]({ domain: change.domain.name, id: change.domain.id, team: change.domain.team_id, from: change.from, to: change.to, failing }, `domain ${change.domain.name} is now ${change.to}`);
  for (const fn of listeners.get(ctx.db) ?? []) fn(ctx.db, change);
}

/** POST /domains/{id}/verify: re-check now and answer the record. */
export async function verifyDomain(ctx: Ctx, teamId: string, id: string, resolver?: Resolver) {
  owned(ctx, teamId, id);
  const row = await checkDomain(ctx, id, resolver);
  if (!row) throw notFound('domain');
  return presentDomain(row, ctx.config);
}

/** `mta domain verify NAME`: re-checks every team's domain of that name; answers the oldest. */
export async function verifyDomainByName(ctx: Ctx, rawName: string) {
  const name = normaliseDomain(rawName);
  if (!name) throw invalid('name', 'name must be a domain name such as example.com.');
  const rows = store.domainsNamed(ctx.db, name);
  if (!rows.length) throw notFound('domain');
  const resolver = checkResolver(ctx);
  const checked = [];
  for (const r of rows) checked.push(await checkDomain(ctx, r.id, resolver));
  const first = checked.find((r): r is DomainRow => !!r);
  if (!first) throw notFound('domain');
  return presentDomain(first, ctx.config);
}

/** The scheduled job: re-checks every domain (pending, verified, failed), a few at a time. */
export async function checkAllDomains(ctx: Ctx, resolver: Resolver = checkResolver(ctx), concurrency = 4): Promise<number> {
  const ids = store.allDomainIds(ctx.db);
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      try { await checkDomain(ctx, id, resolver); } catch (err) { ctx.log.error({ err, id }, 'domain check failed'); }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
  return ids.length;
}
