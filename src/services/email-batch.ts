// POST /emails/batch: 1 to 100 emails, all-or-nothing. Every item is checked first (the first error wins, its
// `param` prefixed by the item's index, e.g. `[3].to`); one credit check for the total; one transaction; one Idempotency-Key.
import { ApiError } from '../core/errors.js';
import { availableCreditsPlan } from './credits.js';
import { checkInput, idempotent, insertChecked, plan } from './emails.js';
import { presentEmail, type Email } from './present.js';
import type { EmailInput } from './email-input.js';
import type { Principal } from './keys.js';
import type { Ctx } from './context.js';
import type { Gen } from '../store/op.js';

export const MAX_BATCH = 100;

/** An ApiError thrown for item `i`, naming the item in its `param` (`[i].to`, or `[i]` without one). */
function ofItem(i: number, err: unknown): unknown {
  if (!(err instanceof ApiError)) return err;
  const param = err.param ? `[${i}].${err.param}` : `[${i}]`;
  return new ApiError(err.type, err.code, `Item ${i}: ${err.message}`, param, err.status);
}

/** Runs fn for item `i`; an ApiError it throws names the item. */
export function forItem<T>(i: number, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw ofItem(i, err);
  }
}

/** forItem for a plan. */
function* forItemPlan<T>(i: number, plan: Gen<T>): Gen<T> {
  try {
    return yield* plan;
  } catch (err) {
    throw ofItem(i, err);
  }
}

function* insertBatch(ctx: Ctx, p: Principal, items: EmailInput[]): Gen<Email[]> {
  const checked = items.map((item, i) => forItem(i, () => checkInput(ctx, item)));
  let credits = 0;
  for (const [i, c] of checked.entries()) credits += (yield* forItemPlan(i, plan(ctx, p, c))).credits;
  if (credits > 0) {
    const avail = yield* availableCreditsPlan(ctx, p.teamId);
    if (credits > avail)
      throw new ApiError(
        'insufficient_credits',
        'insufficient_credits',
        `This batch needs ${credits} credits but only ${avail} are available.`,
      );
  }
  const out: Email[] = [];
  for (const [i, c] of checked.entries()) out.push(presentEmail(yield* forItemPlan(i, insertChecked(ctx, p, c))));
  return out;
}

/** Stores every email of the batch or none; answers the Emails in request order. */
export async function submitBatch(ctx: Ctx, p: Principal, items: EmailInput[], idemKey?: string) {
  const r = await idempotent(ctx, p, idemKey, items, function* () {
    return { object: 'list' as const, data: yield* insertBatch(ctx, p, items) };
  });
  return { status: 202, ...r };
}
