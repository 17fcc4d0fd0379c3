// Use-cases on the suppression list: list (cursor), add manually, remove. The list is live state:
// a test key reads it but cannot change it (403 test_key_not_allowed).
import { invalid, notFound } from '../core/errors.js';
import { normaliseAddress, suppressionKey } from '../core/address.js';
import * as store from '../store/suppressions.js';
import { runPlan, type Gen } from '../store/op.js';
import { runLockingDurable } from '../store/pg/plan-driver.js';
import { decodeCursor, page } from './emails.js';
import { presentSuppression } from './present.js';
import type { Ctx } from './context.js';
import { requireLive, type Owner } from './keys.js';

const REASONS = ['hard_bounce', 'complaint', 'manual'] as const;

function address(raw: unknown): string {
  const a = typeof raw === 'string' ? normaliseAddress(raw.trim()) : null;
  if (!a) throw invalid('address', 'address must be a valid email address.');
  return suppressionKey(a.address);
}

export const listSuppressions = (ctx: Ctx, teamId: string, limit: number, cursor?: string) =>
  runPlan(ctx.db, listPlan(ctx, teamId, limit, cursor));
function* listPlan(ctx: Ctx, teamId: string, limit: number, cursor?: string) {
  const rows = yield* store.listSuppressions(ctx.db, teamId, yield* decodeCursor(ctx.db, 'sup', cursor), limit);
  return yield* page(ctx.db, 'sup', rows, limit, presentSuppression);
}

// PostgreSQL: on the pool, where a result batch's hard bounce may hold the same address's row (plan-driver.ts).
export const addSuppression = (ctx: Ctx, owner: Owner, rawAddress: unknown, reason: unknown = 'manual') =>
  runLockingDurable(ctx.db, () => addPlan(ctx, owner, rawAddress, reason));
function* addPlan(ctx: Ctx, owner: Owner, rawAddress: unknown, reason: unknown) {
  requireLive(owner, 'change the suppression list');
  const teamId = owner.teamId;
  const addr = address(rawAddress);
  if (!(REASONS as readonly unknown[]).includes(reason))
    throw invalid('reason', `reason must be one of ${REASONS.join(', ')}.`);
  const created = yield* store.addSuppression(ctx.db, {
    team_id: teamId,
    address: addr,
    reason: reason as (typeof REASONS)[number],
    email_id: null,
    created_at: ctx.now(),
  });
  return { created, suppression: presentSuppression((yield* store.getSuppression(ctx.db, teamId, addr))!) };
}

export const removeSuppression = (ctx: Ctx, owner: Owner, rawAddress: unknown) =>
  runLockingDurable(ctx.db, () => removePlan(ctx, owner, rawAddress));
function* removePlan(ctx: Ctx, owner: Owner, rawAddress: unknown): Gen<void> {
  requireLive(owner, 'change the suppression list');
  const teamId = owner.teamId;
  const addr = address(rawAddress);
  if (!(yield* store.removeSuppression(ctx.db, teamId, addr))) throw notFound('suppression');
}
