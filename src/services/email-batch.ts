// POST /emails/batch: 1 to 100 emails, all-or-nothing. Every item is checked first (the first error wins, its
// `param` prefixed by the item's index, e.g. `[3].to`); one credit check for the total; one transaction; one Idempotency-Key.
import { ApiError } from '../core/errors.js';
import { availableCredits } from './credits.js';
import { checkInput, idempotent, insertChecked, plan } from './emails.js';
import { presentEmail, type Email } from './present.js';
import type { EmailInput } from './email-input.js';
import type { Principal } from './keys.js';
import type { Ctx } from './context.js';

export const MAX_BATCH = 100;

/** Runs fn for item `i`; an ApiError it throws names the item in its `param` (`[i].to`, or `[i]` without one). */
export function forItem<T>(i: number, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const param = err.param ? `[${i}].${err.param}` : `[${i}]`;
    throw new ApiError(err.type, err.code, `Item ${i}: ${err.message}`, param, err.status);
  }
}

function insertBatch(ctx: Ctx, p: Principal, items: EmailInput[]): Email[] {
  const checked = items.map((item, i) => forItem(i, () => checkInput(ctx, item)));
  const credits = checked.reduce((n, c, i) => n + forItem(i, () => plan(ctx, p, c)).credits, 0);
  if (credits > 0) {
    const avail = availableCredits(ctx, p.teamId);
    if (credits > avail)
      throw new ApiError(
        'insufficient_credits',
        'insufficient_credits',
        `This batch needs ${credits} credits but only ${avail} are available.`,
      );
  }
  return checked.map((c, i) => forItem(i, () => presentEmail(insertChecked(ctx, p, c))));
}

/** Stores every email of the batch or none; answers the Emails in request order. */
export async function submitBatch(ctx: Ctx, p: Principal, items: EmailInput[], idemKey?: string) {
  const r = await idempotent(ctx, p, idemKey, items, () => ({
    object: 'list' as const,
    data: insertBatch(ctx, p, items),
  }));
  return { status: 202, ...r };
}
