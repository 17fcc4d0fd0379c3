// The addresses bounces and complaints come back to: a bounce domain (MTA_BOUNCE_DOMAIN or a team
// domain's return-path name) and the VERP token of a local part, checked with the service's VERP key.
import { readVerp } from '../core/verp.js';
import { isReturnPathName } from '../store/domains.js';
import { secret } from '../store/settings.js';
import { runPlan } from '../store/op.js';
import type { Ctx } from './context.js';

/** Whether `domain` receives bounces for us: the configured bounce domain or a team's return-path name. */
export async function isBounceDomain(ctx: Pick<Ctx, 'db' | 'config'>, domain: string): Promise<boolean> {
  const d = domain.toLowerCase();
  if (d === ctx.config.bounceDomain.toLowerCase()) return true;
  return runPlan(ctx.db, isReturnPathName(ctx.db, d));
}

/** The email and delivery a VERP address (or local part) names; null when it is not ours or forged. */
export const readVerpAddress = async (ctx: Pick<Ctx, 'db'>, address: string) =>
  readVerp(await runPlan(ctx.db, secret(ctx.db, 'verp')), address);
