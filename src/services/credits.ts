// Credit balance and purchases: free monthly allowance + bought grants (12 months each).
import { grantExpiry, monthOf } from '../core/credits.js';
import { invalid } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { freeUsed, insertGrant, liveGrants } from '../store/credits.js';
import { iso } from './present.js';
import type { Ctx } from './context.js';
import { runPlan, transaction, type Gen } from '../store/op.js';

function* balanceOf(ctx: Ctx, teamId: string) {
  const now = ctx.now();
  const free = Math.max(0, ctx.config.freeMonthlyCredits - (yield* freeUsed(ctx.db, teamId, monthOf(now))));
  const grants = yield* liveGrants(ctx.db, teamId, now);
  const purchased = grants.reduce((n, g) => n + g.remaining, 0);
  return {
    object: 'credit_balance' as const,
    available: free + purchased,
    free_remaining: free,
    purchased_remaining: purchased,
    grants: grants.map((g) => ({ id: g.id, amount: g.amount, remaining: g.remaining, expires_at: iso(g.expires_at) })),
  };
}

/** GET /v1/credits. */
export const balance = (ctx: Ctx, teamId: string) => runPlan(ctx.db, balanceOf(ctx, teamId));

/** Credits the team can spend now (inside a submit's transaction, to say how many were missing). */
export function* availableCreditsPlan(ctx: Ctx, teamId: string): Gen<number> {
  return (yield* balanceOf(ctx, teamId)).available;
}

/** Grants `amount` credits bought (for `usd`, if known), then answers the balance. */
export function* addCreditsPlan(ctx: Ctx, teamId: string, amount: number, usd: number | null) {
  if (!Number.isInteger(amount) || amount <= 0) throw invalid('amount', 'amount must be a positive integer.');
  if (usd !== null && !(usd >= 0)) throw invalid('usd', 'usd must be a non-negative number.');
  const now = ctx.now();
  yield* transaction(ctx.db, () =>
    insertGrant(ctx.db, {
      id: newId('gr', now),
      team_id: teamId,
      amount,
      remaining: amount,
      usd,
      created_at: now,
      expires_at: grantExpiry(now),
    }),
  );
  return yield* balanceOf(ctx, teamId);
}

/** `mta credits add`. */
export const addCredits = (ctx: Ctx, teamId: string, amount: number, usd: number | null) =>
  runPlan(ctx.db, addCreditsPlan(ctx, teamId, amount, usd));
