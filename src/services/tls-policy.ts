// Transport security of outbound mail (issue 34): recipient domains' cached MTA-STS policies (the outbound loop reads
// and writes them through here) and the operator's per-domain override (`mta tls-policy`).
import { runPlan } from '../store/op.js';
import * as store from '../store/tls-policies.js';
import type { StsMode, StsPolicy } from '../core/mta-sts.js';
import type { Ctx } from './context.js';
import { SecureDns } from './secure-dns.js';
import { daneHosts, secureMxHosts } from './dane-lookup.js';

export const OVERRIDE_MODES = ['enforce', 'opportunistic', 'off'] as const;
export type OverrideMode = (typeof OVERRIDE_MODES)[number];

export interface CachedSts extends StsPolicy {
  id: string;
  fetched_at: number;
  expires_at: number;
}

const DOMAIN = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/;

/** A domain name as kept (lower case, no final dot), or an Error saying what is wrong. */
export function normalDomain(input: string): string {
  const d = input.trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(d)) throw new Error(`not a domain name: ${input}`);
  return d;
}

export async function cachedSts(ctx: Ctx, domain: string): Promise<CachedSts | null> {
  const r = await runPlan(ctx.db, store.stsPolicyOf(ctx.db, domain));
  if (!r) return null;
  return {
    id: r.policy_id,
    mode: r.mode as StsMode,
    mx: JSON.parse(r.mx_json) as string[],
    max_age: r.max_age,
    fetched_at: r.fetched_at,
    expires_at: r.expires_at,
  };
}

export async function saveSts(ctx: Ctx, domain: string, id: string, p: StsPolicy): Promise<CachedSts> {
  const now = ctx.now();
  const row = { ...p, id, fetched_at: now, expires_at: now + p.max_age * 1000 };
  await runPlan(
    ctx.db,
    store.saveStsPolicy(ctx.db, {
      domain,
      policy_id: id,
      mode: p.mode,
      mx_json: JSON.stringify(p.mx),
      max_age: p.max_age,
      fetched_at: row.fetched_at,
      expires_at: row.expires_at,
    }),
  );
  return row;
}

export async function tlsOverride(ctx: Ctx, domain: string): Promise<OverrideMode | null> {
  return ((await runPlan(ctx.db, store.tlsOverrideOf(ctx.db, domain)))?.mode as OverrideMode | undefined) ?? null;
}

/** `mta tls-policy DOMAIN`: what the store knows of the domain (operations.md "Transport security"). */
export async function describeTlsPolicy(ctx: Ctx, input: string) {
  const domain = normalDomain(input);
  const sts = await cachedSts(ctx, domain);
  return {
    domain,
    mta_sts: sts
      ? {
          mode: sts.mode,
          mx: sts.mx,
          max_age: sts.max_age,
          id: sts.id,
          fetched_at: new Date(sts.fetched_at).toISOString(),
        }
      : null,
    dane: await hasDane(ctx, domain),
    override: await tlsOverride(ctx, domain),
  };
}

/**
 * Whether DANE applies to the domain (MTA_DANE=on): its MX RRset is validated and an MX host has validated TLSA
 * records with a usable one. False with MTA_DANE=off (no lookup) or when the lookups fail.
 */
async function hasDane(ctx: Ctx, domain: string): Promise<boolean> {
  if (ctx.config.dane !== 'on') return false;
  const dns = new SecureDns(ctx.config, { timeoutMs: 3000, tries: 2 });
  try {
    const mx = await secureMxHosts(dns, domain);
    if (!mx.secure) return false;
    const hosts = await daneHosts(dns, domain, mx.hosts);
    return Object.values(hosts ?? {}).some((h) => h.kind === 'dane' && h.records.length > 0);
  } catch {
    return false;
  }
}

export async function setTlsPolicyOverride(ctx: Ctx, input: string, mode: OverrideMode) {
  await runPlan(ctx.db, store.setTlsOverride(ctx.db, normalDomain(input), mode, ctx.now()));
  return describeTlsPolicy(ctx, input);
}

export async function clearTlsPolicyOverride(ctx: Ctx, input: string) {
  await runPlan(ctx.db, store.clearTlsOverride(ctx.db, normalDomain(input)));
  return describeTlsPolicy(ctx, input);
}
