// Sending domains: add (generate the DKIM keys, return the DNS records), rotate the DKIM key, list, delete
// (checks: domain-checks.ts). Private keys stay in the store; only presentDomain's output leaves this module.
import { generateKeyPair, randomBytes } from 'node:crypto';
import { ApiError, invalid, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { normaliseDomain, selectorFor } from '../core/domain-records.js';
import { isUniqueViolation } from '../store/db.js';
import { runPlan, transaction, type Gen } from '../store/op.js';
import * as store from '../store/domains.js';
import type { DomainRow } from '../store/domains.js';
import { presentDomain, type Domain } from './present-domain.js';
import { teamPool } from '../config/ip-pools.js';
import { teamById } from '../store/teams.js';
import { decodeCursor, page } from './emails.js';
import type { Ctx } from './context.js';

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

export function* present(ctx: Ctx, d: DomainRow) {
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
  if (await runPlan(ctx.db, store.domainByName(ctx.db, teamId, name))) throw exists(name);
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
      ctx.db,
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
  return runPlan(ctx.db, presentById(ctx, row.id));
}

export function* owned(ctx: Ctx, teamId: string, id: string): Gen<DomainRow> {
  const d = yield* store.domainById(ctx.db, id);
  if (!d || d.team_id !== teamId) throw notFound('domain');
  return d;
}

export const getDomain = (ctx: Ctx, teamId: string, id: string) => runPlan(ctx.db, getPlan(ctx, teamId, id));
function* getPlan(ctx: Ctx, teamId: string, id: string) {
  return yield* present(ctx, yield* owned(ctx, teamId, id));
}

export const listDomains = (ctx: Ctx, teamId: string, limit: number, cursor?: string) =>
  runPlan(ctx.db, listPlan(ctx, teamId, limit, cursor));
function* listPlan(ctx: Ctx, teamId: string, limit: number, cursor?: string) {
  const rows = yield* store.listDomains(ctx.db, teamId, yield* decodeCursor(ctx.db, 'dom', cursor), limit);
  const views = new Map<DomainRow, Domain>();
  for (const r of rows.slice(0, limit)) views.set(r, yield* present(ctx, r));
  return yield* page(ctx.db, 'dom', rows, limit, (r) => views.get(r)!);
}

/** Removes a domain: live sends from it are refused at once, and queued mail is no longer signed with its key. */
export const deleteDomain = (ctx: Ctx, teamId: string, id: string) => runPlan(ctx.db, deletePlan(ctx, teamId, id));
function* deletePlan(ctx: Ctx, teamId: string, id: string) {
  const d = yield* owned(ctx, teamId, id);
  yield* store.deleteDomain(ctx.db, d.id);
  ctx.log.info({ domain: d.name, id: d.id, team: teamId }, 'domain deleted');
  return { object: 'domain' as const, id: d.id, name: d.name, deleted: true };
}

const rotating = () =>
  new ApiError(
    'validation_error',
    'dkim_rotation_in_progress',
    "A DKIM key rotation is already in progress: publish the next key's record and verify the domain first.",
  );

/** POST /domains/{id}/rotate-dkim: a new RSA key (new selector) becomes the domain's next key. */
export async function rotateDkim(ctx: Ctx, teamId: string, id: string) {
  const d = await runPlan(ctx.db, owned(ctx, teamId, id));
  if ((await runPlan(ctx.db, store.dkimKeys(ctx.db, d.id))).some((k) => k.role === 'next')) throw rotating();
  const { publicKey, privateKey } = await keyPair('rsa');
  const now = ctx.now();
  const selector = await runPlan(
    ctx.db,
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
  return runPlan(ctx.db, presentById(ctx, d.id));
}

/** PATCH /domains/{id} `{receiving}`: turns receiving at the domain on or off (docs/receiving.md); answers the Domain. */
export function updateDomain(ctx: Ctx, teamId: string, id: string, patch: { receiving?: boolean }) {
  return runPlan(
    ctx.db,
    transaction(ctx.db, function* () {
      yield* owned(ctx, teamId, id);
      if (patch.receiving !== undefined) yield* store.setReceiving(ctx.db, id, patch.receiving);
      return yield* presentById(ctx, id);
    }),
  );
}
