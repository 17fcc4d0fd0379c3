// Looks up a sending domain's published records through the shared resolver (MTA_DNS_SERVERS) and
// judges each one: pass, fail (definitive), or error (time-out, SERVFAIL: inconclusive). Never throws.
import type { Resolver } from 'node:dns/promises';
import { spf } from 'mailauth';
import type { Config } from '../config/schema.js';
import { judgeDkim, judgeDmarc, judgeReturnPath, spfTestIps, type CheckOutcome, type Purpose } from '../core/domain-records.js';

/** "No such name" and "no records of this type" are answers; anything else is DNS trouble. */
const isNoData = (err: unknown) => ['ENOTFOUND', 'ENODATA'].includes((err as NodeJS.ErrnoException)?.code ?? '');

function trouble(name: string, type: string, err: unknown): CheckOutcome {
  const code = (err as NodeJS.ErrnoException)?.code ?? 'EUNKNOWN';
  const what = code === 'ETIMEOUT' ? 'timed out' : `failed (${code})`;
  return { result: 'error', error: `DNS lookup of ${type} ${name} ${what}; keeping the previous status.` };
}

/** TXT values at a name, each record's strings joined; [] when the name or the type has no data. */
async function txt(resolver: Resolver, name: string): Promise<string[]> {
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
  } catch (err) {
    if (isNoData(err)) return [];
    throw err;
  }
}

async function guard(name: string, type: string, fn: () => Promise<CheckOutcome>): Promise<CheckOutcome> {
  try { return await fn(); } catch (err) { return trouble(name, type, err); }
}

export interface CheckTarget { name: string; dkimName: string; publicKey: string; returnPath: string }

export function checkDkim(resolver: Resolver, t: CheckTarget): Promise<CheckOutcome> {
  return guard(t.dkimName, 'TXT', async () => judgeDkim(await txt(resolver, t.dkimName), t.publicKey));
}

export function checkDmarc(resolver: Resolver, t: CheckTarget): Promise<CheckOutcome> {
  const name = `_dmarc.${t.name}`;
  return guard(name, 'TXT', async () => judgeDmarc(await txt(resolver, name)));
}

export function checkReturnPath(resolver: Resolver, t: CheckTarget, hostname: string): Promise<CheckOutcome> {
  return guard(t.returnPath, 'MX', async () => {
    let mx: { exchange: string; priority: number }[] = [];
    try { mx = await resolver.resolveMx(t.returnPath); } catch (err) { if (!isNoData(err)) throw err; }
    return judgeReturnPath(mx, hostname);
  });
}

/** The IPs SPF must authorise: MTA_SENDING_IPS, else the addresses of MTA_HOSTNAME. */
async function sendingIps(resolver: Resolver, config: Pick<Config, 'sendingIps' | 'hostname'>): Promise<string[]> {
  const fixed = spfTestIps(config.sendingIps);
  if (fixed.length || config.sendingIps.length) return fixed;
  const lookup = async (fn: () => Promise<string[]>) => { try { return await fn(); } catch (err) { if (isNoData(err)) return []; throw err; } };
  const [a, aaaa] = await Promise.all([lookup(() => resolver.resolve4(config.hostname)), lookup(() => resolver.resolve6(config.hostname))]);
  return [...a, ...aaaa];
}

/** SPF evaluated by mailauth (RFC 7208) for MAIL FROM postmaster@<domain> from each sending IP. */
export function checkSpf(resolver: Resolver, t: CheckTarget, config: Pick<Config, 'sendingIps' | 'hostname'>): Promise<CheckOutcome> {
  return guard(t.name, 'TXT', async () => {
    const ips = await sendingIps(resolver, config);
    if (!ips.length) return { result: 'fail', found: null, error: `Cannot tell which IPs to authorise: ${config.hostname} has no A/AAAA record and MTA_SENDING_IPS lists no IP address.` };
    const lookup = (name: string, type: string) => resolver.resolve(name, type) as Promise<string[][] | string[]>;
    let found: string | null = null;
    for (const ip of ips) {
      const r = await spf({ sender: `postmaster@${t.name}`, ip, helo: config.hostname, mta: config.hostname, resolver: lookup });
      found = r.rr ?? null;
      const res = r.status.result;
      if (res === 'temperror') return { result: 'error', error: `SPF evaluation hit a DNS error (${r.status.comment ?? 'temperror'}); keeping the previous status.` };
      if (res === 'none') return { result: 'fail', found, error: 'No SPF record (v=spf1) at this name.' };
      if (res !== 'pass') return { result: 'fail', found, error: `SPF evaluates to ${res} for ${ip}; the record must authorise it.` };
    }
    return { result: 'pass', found };
  });
}

/** All four checks, concurrently. */
export async function checkAll(resolver: Resolver, t: CheckTarget, config: Pick<Config, 'sendingIps' | 'hostname'>): Promise<Record<Purpose, CheckOutcome>> {
  const [dkim, spfR, dmarc, rp] = await Promise.all([checkDkim(resolver, t), checkSpf(resolver, t, config), checkDmarc(resolver, t), checkReturnPath(resolver, t, config.hostname)]);
  return { dkim, spf: spfR, dmarc, return_path: rp };
}
