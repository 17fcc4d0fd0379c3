// Which of a team's domains may send for an address domain (live mode), and the DKIM key and
// return-path it signs and bounces with. Rule (docs/decisions.md): the exact domain, or a verified
// parent domain (relaxed DKIM/DMARC alignment: d=example.com aligns with From: a@mail.example.com).
import {
  domainsGeneration,
  isVerifiedDomainNamedLater,
  verifiedDomainNamed,
  verifiedEd25519Key,
  type SendingDomain,
} from '../store/domains.js';
import { isPg } from '../store/db.js';
import { read, type Gen, type Later } from '../store/op.js';
import { runPooled } from '../store/pg/plan-driver.js';
import { Remembered } from './remembered.js';
import type { Ctx } from './context.js';

export type { SendingDomain };

/** The names a sender address's domain may be verified under: itself, then each parent (not the TLD). */
function candidatesOf(addressDomain: string): string[] {
  const labels = addressDomain.toLowerCase().split('.');
  return labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
}

export function* verifiedDomainFor(
  ctx: Pick<Ctx, 'db'>,
  teamId: string,
  addressDomain: string,
): Gen<SendingDomain | null> {
  for (const name of candidatesOf(addressDomain)) {
    const d = yield* verifiedDomainNamed(ctx.db, teamId, name);
    if (d) return d;
  }
  return null;
}

/**
 * Whether verifiedDomainFor finds a domain, without reading its keys; the reads are sent with the next statement
 * that needs an answer (PostgreSQL, in a transaction): `yield* anyFound(them)` answers.
 */
export function* hasVerifiedDomainForLater(
  ctx: Pick<Ctx, 'db'>,
  teamId: string,
  addressDomain: string,
): Gen<Later<unknown>[]> {
  const found: Later<unknown>[] = [];
  for (const name of candidatesOf(addressDomain)) found.push(yield* isVerifiedDomainNamedLater(ctx.db, teamId, name));
  return found;
}

/** Whether one of the reads hasVerifiedDomainForLater sent found a row. */
export function* anyFound(found: Later<unknown>[]): Gen<boolean> {
  for (const f of found) if ((yield* read(f)) !== undefined) return true;
  return false;
}

/**
 * The DKIM signing parameters for a team's sender domain (its current key: during a rotation the
 * next key is not used until its record verifies), or null when it has no verified domain.
 * `ed25519` is the second key to sign with (RFC 8463), once its own record verified.
 */
export function* signingKeyFor(ctx: Pick<Ctx, 'db'>, teamId: string, addressDomain: string) {
  const d = yield* verifiedDomainFor(ctx, teamId, addressDomain);
  if (!d || !d.dkim_private_key) return null;
  const ed = yield* verifiedEd25519Key(ctx.db, d.id);
  return {
    signingDomain: d.name,
    selector: d.dkim_selector,
    privateKey: d.dkim_private_key,
    returnPath: d.return_path_verified ? d.return_path : null,
    ed25519: ed ? { selector: ed.selector, privateKey: ed.private_key } : null,
  };
}

/** PostgreSQL: how long a key found is used without reading again (another node's domain change is seen by then). */
const PG_KEY_TTL_MS = 1000;
type SigningKey = ReturnType<typeof signingKeyFor> extends Gen<infer T> ? T : never;
const signingKeys = new Remembered<SigningKey>({
  ttlMs: (db) => (isPg(db) ? PG_KEY_TTL_MS : Infinity),
  max: 1000,
  keep: (key) => key !== null,
  stamp: domainsGeneration,
});

/**
 * signingKeyFor, remembered per (team, sender domain): the delivery loop prepares every message of a burst with
 * the same key, and two store reads per message are saved. Forgotten at any write of domains or keys through this
 * process (store/domains.ts generation) and, on SQLite, at any commit by another connection (the CLI: data_version);
 * on PostgreSQL, another node's change is seen within PG_KEY_TTL_MS. Only keys found are remembered.
 * Awaited (the delivery loop's "making ready" stage): on PostgreSQL with a pool the reads go there, one read per key
 * on its way, and the event loop goes on meanwhile (the key is read again every PG_KEY_TTL_MS, so this was the
 * synchronous connection's steadiest reader during delivery); elsewhere (SQLite, no pool) at once underneath.
 */
export const cachedSigningKeyFor = (ctx: Pick<Ctx, 'db'>, teamId: string, addressDomain: string): Promise<SigningKey> =>
  signingKeys.getAsync(ctx.db, `${teamId} ${addressDomain}`, () =>
    runPooled(ctx.db, signingKeyFor(ctx, teamId, addressDomain), 'other'),
  );
