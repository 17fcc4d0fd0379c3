// Looks up a sending domain's published records through the shared resolver (MTA_DNS_SERVERS) and
// judges each one (the return path: its MX and its SPF): pass, fail, or error (time-out, SERVFAIL). Never throws.
import type { Resolver } from 'node:dns/promises';
import { spf } from 'mailauth';
import type { Config } from '../config/schema.js';
import {
  judgeDkim,
  judgeDmarc,
  judgeReportAuth,
  judgeReturnPath,
  judgeSpf,
  reportAuthRecord,
  spfTestIps,
  type CheckKey,
  type CheckOutcome,
} from '../core/domain-records.js';

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
  try {
    return await fn();
  } catch (err) {
    return trouble(name, type, err);
  }
}

export interface CheckTarget {
  name: string;
  dkimName: string;
  publicKey: string;
  returnPath: string;
}

export function checkDkim(resolver: Resolver, t: CheckTarget): Promise<CheckOutcome> {
  return guard(t.dkimName, 'TXT', async () => judgeDkim(await txt(resolver, t.dkimName), t.publicKey));
}

export function checkDmarc(resolver: Resolver, t: CheckTarget): Promise<CheckOutcome> {
  const name = `_dmarc.${t.name}`;
  return guard(name, 'TXT', async () => judgeDmarc(await txt(resolver, name)));
}

/** Whether one of the MX hosts of `name` is our inbound listener's hostname (the return path, a receiving domain). */
function checkMx(resolver: Resolver, name: string, hostname: string): Promise<CheckOutcome> {
  return guard(name, 'MX', async () => {
    let mx: { exchange: string; priority: number }[] = [];
    try {
      mx = await resolver.resolveMx(name);
    } catch (err) {
      if (!isNoData(err)) throw err;
    }
    return judgeReturnPath(mx, hostname);
  });
}

export const checkReturnPath = (resolver: Resolver, t: CheckTarget, hostname: string): Promise<CheckOutcome> =>
  checkMx(resolver, t.returnPath, hostname);

/** The `_report._dmarc` authorisation under the bounce domain (RFC 7489 §7.1). */
export function checkReportAuth(resolver: Resolver, t: CheckTarget, bounceDomain: string): Promise<CheckOutcome> {
  const name = reportAuthRecord(t.name, bounceDomain).name;
  return guard(name, 'TXT', async () => judgeReportAuth(await txt(resolver, name)));
}

/** The IPs SPF must authorise: MTA_SENDING_IPS, else the addresses of MTA_HOSTNAME. */
async function sendingIps(resolver: Resolver, config: Pick<Config, 'sendingIps' | 'hostname'>): Promise<string[]> {
  const fixed = spfTestIps(config.sendingIps);
  if (fixed.length || config.sendingIps.length) return fixed;
  const lookup = async (fn: () => Promise<string[]>) => {
    try {
      return await fn();
    } catch (err) {
      if (isNoData(err)) return [];
      throw err;
    }
  };
  const [a, aaaa] = await Promise.all([
    lookup(() => resolver.resolve4(config.hostname)),
    lookup(() => resolver.resolve6(config.hostname)),
  ]);
  return [...a, ...aaaa];
}

/** mailauth's SPF evaluation (RFC 7208) of MAIL FROM postmaster@<name> from `ip` (result in `.status.result`). */
export function evaluateSpf(resolver: Resolver, name: string, ip: string, hostname: string) {
  const lookup = (n: string, type: string) => resolver.resolve(n, type) as Promise<string[][] | string[]>;
  return spf({ sender: `postmaster@${name}`, ip, helo: hostname, mta: hostname, resolver: lookup });
}

/**
 * SPF evaluated by mailauth (RFC 7208) for MAIL FROM postmaster@<name> from each sending IP: the apex
 * domain (the `spf` record) or the return-path name (the VERP envelope sender's domain).
 */
export function checkSpf(
  resolver: Resolver,
  name: string,
  config: Pick<Config, 'sendingIps' | 'hostname'>,
): Promise<CheckOutcome> {
  return guard(name, 'TXT', async () => {
    const ips = await sendingIps(resolver, config);
    if (!ips.length)
      return {
        result: 'fail',
        found: null,
        error: `Cannot tell which IPs to authorise: ${config.hostname} has no A/AAAA record and MTA_SENDING_IPS lists no IP address.`,
      };
    let out: CheckOutcome = { result: 'pass', found: null };
    for (const ip of ips) {
      const r = await evaluateSpf(resolver, name, ip, config.hostname);
      out = judgeSpf(r.status.result, ip, r.rr ?? null, r.status.comment || undefined);
      if (out.result !== 'pass') return out;
    }
    return out;
  });
}

/**
 * All seven checks, concurrently (the return path has two: its MX and its SPF; then the report authorisation and
 * the MX of the domain itself, for receiving).
 */
export async function checkAll(
  resolver: Resolver,
  t: CheckTarget,
  config: Pick<Config, 'sendingIps' | 'hostname' | 'bounceDomain'>,
): Promise<Record<CheckKey, CheckOutcome>> {
  const [dkim, spfR, dmarc, rp, rpSpf, auth, inMx] = await Promise.all([
    checkDkim(resolver, t),
    checkSpf(resolver, t.name, config),
    checkDmarc(resolver, t),
    checkReturnPath(resolver, t, config.hostname),
    checkSpf(resolver, t.returnPath, config),
    checkReportAuth(resolver, t, config.bounceDomain),
    checkMx(resolver, t.name, config.hostname),
  ]);
  return {
    dkim,
    spf: spfR,
    dmarc,
    return_path: rp,
    return_path_spf: rpSpf,
    dmarc_report_auth: auth,
    inbound_mx: inMx,
  };
}
