// Sending domains: add (generate the DKIM keys, return the DNS records), check, rotate the DKIM key,
// list, delete. Private keys stay in the store; only presentDomain's output leaves this module.
import { generateKeyPair, randomBytes } from 'node:crypto';
import type { Resolver } from 'node:dns/promises';
import { ApiError, invalid, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import {
  normaliseDomain,
  selectorFor,
  nextDomainStatus,
  returnPathVerified,
  CHECK_KEYS,
  RETIRE_GRACE_MS,
  type CheckKey,
  type CheckOutcome,
  type DomainStatus,
} from '../core/domain-records.js';
import { isUniqueViolation, type DB } from '../store/db.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import * as store from '../store/domains.js';
import type { DkimKeyRow, DomainRow } from '../store/domains.js';
import { checkAll, checkDkim } from './dns-checks.js';
import { presentDomain, type Domain, type RecordResult } from './present-domain.js';
import { createResolver } from './resolver.js';
import { teamPool } from '../config/ip-pools.js';
import { teamById } from '../store/teams.js';
import { decodeCursor, page } from './emails.js';
import type { Ctx } from './context.js';
import { raiseDomainAlert } from './alerts.js';
import { runSync } from '../store/op.js';

export { presentDomain };

type Algorithm = 'rsa' | 'ed25519';

/** A key pair: PKCS#8 PEM private key; public key as published in p= (SPKI DER for RSA, raw 32 bytes for Ed25519). */
function keyPair(algorithm: Algorithm): Promise<{ publicKey: string; privateKey: string }> {
  const enc = {
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  } as const;
  const done =
    (resolve: (k: { publicKey: string; privateKey: string }) => void, reject: (e: Error) => void) =>
    (err: Error | null, pub: Buffer, priv: string) => {
      if (err) return reject(err);
      resolve({ publicKey: (algorithm === 'ed25519' ? pub.subarray(-32) : pub).toString('base64'), privateKey: priv });
    };
  return new Promise((resolve, reject) =>
    algorithm === 'rsa'
      ? generateKeyPair('rsa', { modulusLength: 2048, ...enc }, done(resolve, reject))
      : generateKeyPair('ed25519', enc, done(resolve, reject)),
  );
}

/** A fresh selector (`mta<date><4 hex>`) that none of the domain's keys uses. */
function newSelector(now: number, taken: string[]): string {
  for (;;) {
    const s = selectorFor(now, randomBytes(2).toString('hex'));
    if (!taken.includes(s)) return s;
  }
}

/**
 * What a team's SPF records authorise (published and checked alike): its own IP pool (MTA_IP_POOLS,
 * by team id or name) when it has one, else the default sending IPs (MTA_SENDING_IPS).
 */
export function* spfSettings(
  ctx: Pick<Ctx, 'db' | 'config'>,
  teamId: string,
): Gen<{ sendingIps: string[]; hostname: string; bounceDomain: string }> {
  const pool = teamPool(ctx.config.ipPools, { id: teamId, name: (yield* teamById(ctx.db, teamId))?.name });
  return {
    sendingIps: pool ?? ctx.config.sendingIps,
    hostname: ctx.config.hostname,
    bounceDomain: ctx.config.bounceDomain,
  };
}

function* present(ctx: Ctx, d: DomainRow) {
  const spf = yield* spfSettings(ctx, d.team_id);
  return presentDomain(d, spf, yield* store.dkimKeys(ctx.db, d.id));
}
function* presentById(ctx: Ctx, id: string) {
  return yield* present(ctx, (yield* store.domainById(ctx.db, id))!);
}

const exists = (name: string) => invalid('name', `The domain ${name} is already added to this team.`, 'domain_exists');

export interface AddOptions {
  ed25519?: boolean;
}

/** Adds a domain to a team with a fresh RSA-2048 DKIM key (and an Ed25519 one on request); answers the Domain. */
export async function addDomain(ctx: Ctx, teamId: string, rawName: unknown, opts: AddOptions = {}) {
  const name = typeof rawName === 'string' ? normaliseDomain(rawName) : null;
  if (!name) throw invalid('name', 'name must be a domain name such as example.com.');
  if (await runPlan(store.domainByName(ctx.db, teamId, name))) throw exists(name);
  const [rsa, ed] = await Promise.all([keyPair('rsa'), opts.ed25519 ? keyPair('ed25519') : null]);
  const now = ctx.now();
  const selector = newSelector(now, []);
  const row = {
    id: newId('dom', now),
    team_id: teamId,
    name,
    created_at: now,
    dkim_selector: selector,
    dkim_algorithm: 'rsa',
    dkim_private_key: rsa.privateKey,
    dkim_public_key: rsa.publicKey,
    return_path: `bounces.${name}`,
    records_json: null,
  };
  const edSelector = ed ? newSelector(now, [selector]) : null;
  try {
    await runPlan(
      transaction(ctx.db, function* () {
        yield* store.insertDomain(ctx.db, row);
        if (ed)
          yield* store.insertDkimKey(ctx.db, {
            domain_id: row.id,
            role: 'ed25519',
            selector: edSelector!,
            algorithm: 'ed25519',
            private_key: ed.privateKey,
            public_key: ed.publicKey,
            created_at: now,
          });
      }),
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw exists(name);
    throw err;
  }
  ctx.log.info(
    { domain: name, id: row.id, team: teamId, selector, ed25519_selector: edSelector ?? undefined },
    'domain added',
  );
  return runPlan(presentById(ctx, row.id));
}

export function* owned(ctx: Ctx, teamId: string, id: string): Gen<DomainRow> {
  const d = yield* store.domainById(ctx.db, id);
  if (!d || d.team_id !== teamId) throw notFound('domain');
  return d;
}

export const getDomain = (ctx: Ctx, teamId: string, id: string) => runPlan(getPlan(ctx, teamId, id));
function* getPlan(ctx: Ctx, teamId: string, id: string) {
  return yield* present(ctx, yield* owned(ctx, teamId, id));
}

export const listDomains = (ctx: Ctx, teamId: string, limit: number, cursor?: string) =>
  runPlan(listPlan(ctx, teamId, limit, cursor));
function* listPlan(ctx: Ctx, teamId: string, limit: number, cursor?: string) {
  const rows = yield* store.listDomains(ctx.db, teamId, decodeCursor(ctx.db, 'dom', cursor), limit);
  const views = new Map<DomainRow, Domain>();
  for (const r of rows.slice(0, limit)) views.set(r, yield* present(ctx, r));
  return page(ctx.db, 'dom', rows, limit, (r) => views.get(r)!);
}

/** Removes a domain: live sends from it are refused at once, and queued mail is no longer signed with its key. */
export const deleteDomain = (ctx: Ctx, teamId: string, id: string) => runPlan(deletePlan(ctx, teamId, id));
function* deletePlan(ctx: Ctx, teamId: string, id: string) {
  const d = yield* owned(ctx, teamId, id);
  yield* store.deleteDomain(ctx.db, d.id);
  ctx.log.info({ domain: d.name, id: d.id, team: teamId }, 'domain deleted');
  return { object: 'domain' as const, id: d.id, name: d.name, deleted: true };
}

// ---- checks and status changes ----

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
  const d = await runPlan(store.domainById(ctx.db, id));
  if (!d) return null;
  const target = {
    name: d.name,
    dkimName: `${d.dkim_selector}._domainkey.${d.name}`,
    publicKey: d.dkim_public_key,
    returnPath: d.return_path ?? `bounces.${d.name}`,
  };
  const keys = (await runPlan(store.dkimKeys(ctx.db, id))).filter((k) => k.role !== 'retiring');
  const spf = await runPlan(spfSettings(ctx, d.team_id));
  const [outcomes, keyOutcomes] = await Promise.all([
    checkAll(resolver, target, spf),
    Promise.all(
      keys.map((k) =>
        checkDkim(resolver, { ...target, dkimName: `${k.selector}._domainkey.${d.name}`, publicKey: k.public_key }),
      ),
    ),
  ]);
  return runPlan(transaction(ctx.db, () => writeResults(ctx, d, keys, outcomes, keyOutcomes)));
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
  if (fresh.status === 'verified') alertBroken(ctx, row, prev, results);
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

const rotating = () =>
  new ApiError(
    'validation_error',
    'dkim_rotation_in_progress',
    "A DKIM key rotation is already in progress: publish the next key's record and verify the domain first.",
  );

/** POST /domains/{id}/rotate-dkim: a new RSA key (new selector) becomes the domain's next key. */
export async function rotateDkim(ctx: Ctx, teamId: string, id: string) {
  const d = await runPlan(owned(ctx, teamId, id));
  if ((await runPlan(store.dkimKeys(ctx.db, d.id))).some((k) => k.role === 'next')) throw rotating();
  const { publicKey, privateKey } = await keyPair('rsa');
  const now = ctx.now();
  const selector = await runPlan(
    transaction(ctx.db, function* () {
      const fresh = yield* owned(ctx, teamId, id);
      const keys = yield* store.dkimKeys(ctx.db, fresh.id);
      if (keys.some((k) => k.role === 'next')) throw rotating();
      const sel = newSelector(now, [fresh.dkim_selector, ...keys.map((k) => k.selector)]);
      yield* store.insertDkimKey(ctx.db, {
        domain_id: fresh.id,
        role: 'next',
        selector: sel,
        algorithm: 'rsa',
        private_key: privateKey,
        public_key: publicKey,
        created_at: now,
      });
      return sel;
    }),
  );
  ctx.log.info({ domain: d.name, id: d.id, team: teamId, selector, current: d.dkim_selector }, 'DKIM rotation started');
  return runPlan(presentById(ctx, d.id));
}

/** domain.alert dns_record_broken for each record of a verified domain that passed before and fails now. */
function alertBroken(
  ctx: Ctx,
  d: DomainRow,
  prev: Partial<Record<CheckKey, RecordResult>>,
  results: Record<CheckKey, RecordResult>,
): void {
  for (const p of CHECK_KEYS) {
    if (prev[p]?.status !== 'verified' || results[p].status !== 'failed') continue;
    const details = { record: p, found: results[p].found, error: results[p].error ?? null };
    runSync(raiseDomainAlert(ctx, { alert: 'dns_record_broken', domain: d, key: p, details }));
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

/** PATCH /domains/{id} `{receiving}`: turns receiving at the domain on or off (docs/receiving.md); answers the Domain. */
export function updateDomain(ctx: Ctx, teamId: string, id: string, patch: { receiving?: boolean }) {
  return runPlan(
    transaction(ctx.db, function* () {
      yield* owned(ctx, teamId, id);
      if (patch.receiving !== undefined) yield* store.setReceiving(ctx.db, id, patch.receiving);
      return yield* presentById(ctx, id);
    }),
  );
}

/** POST /domains/{id}/verify: re-check now and answer the record. */
export async function verifyDomain(ctx: Ctx, teamId: string, id: string, resolver?: Resolver) {
  await runPlan(owned(ctx, teamId, id));
  const row = await checkDomain(ctx, id, resolver);
  if (!row) throw notFound('domain');
  return runPlan(present(ctx, row));
}

/** `mta domain verify NAME`: re-checks every team's domain of that name; answers the oldest. */
export async function verifyDomainByName(ctx: Ctx, rawName: string) {
  const name = normaliseDomain(rawName);
  if (!name) throw invalid('name', 'name must be a domain name such as example.com.');
  const rows = await runPlan(store.domainsNamed(ctx.db, name));
  if (!rows.length) throw notFound('domain');
  const resolver = checkResolver(ctx);
  const checked = [];
  for (const r of rows) checked.push(await checkDomain(ctx, r.id, resolver));
  const first = checked.find((r): r is DomainRow => !!r);
  if (!first) throw notFound('domain');
  return runPlan(present(ctx, first));
}

/** The scheduled job: re-checks every domain (pending, verified, failed), a few at a time. */
export async function checkAllDomains(
  ctx: Ctx,
  resolver: Resolver = checkResolver(ctx),
  concurrency = 4,
): Promise<number> {
  const ids = await runPlan(store.allDomainIds(ctx.db));
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
