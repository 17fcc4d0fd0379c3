// MTA-STS (RFC 8461), the pure parts: the `_mta-sts` TXT record, the policy file, and whether an MX host name matches
// one of its `mx` patterns. The fetch (HTTPS) and the cache live in outbound/mta-sts.ts and store/tls-policies.ts.

export type StsMode = 'enforce' | 'testing' | 'none';

export interface StsPolicy {
  mode: StsMode;
  mx: string[];
  /** seconds */
  max_age: number;
}

/** The largest policy file read (RFC 8461 §3.3 suggests 64 KiB). */
export const MAX_POLICY_BYTES = 64 * 1024;
/** RFC 8461 §3.2: max_age at most 31557600 s (one year). */
const MAX_AGE_LIMIT = 31_557_600;

/**
 * The policy id of a domain's `_mta-sts` TXT answer, or null when there is no usable record: exactly one record
 * starting `v=STSv1`, with an `id` of 1–32 letters and digits (RFC 8461 §3.1). Each answer is its strings joined.
 */
export function stsRecordId(records: readonly string[]): string | null {
  const sts = records.filter((r) => /^v=STSv1\s*(;|$)/.test(r.trim()));
  if (sts.length !== 1) return null;
  for (const field of sts[0].split(';')) {
    const [k, v] = field.split('=').map((x) => x?.trim());
    if (k === 'id' && v && /^[A-Za-z0-9]{1,32}$/.test(v)) return v;
  }
  return null;
}

/** The policy file (`key: value` lines, CRLF or LF), or an error naming what is wrong. */
export function parseStsPolicy(text: string): StsPolicy | { error: string } {
  let version: string | null = null;
  let mode: string | null = null;
  let maxAge: number | null = null;
  const mx: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i < 0) continue;
    const key = line.slice(0, i).trim();
    const value = line.slice(i + 1).trim();
    if (key === 'version') version ??= value;
    else if (key === 'mode') mode ??= value;
    else if (key === 'max_age') maxAge ??= /^[0-9]{1,15}$/.test(value) ? Number(value) : NaN;
    else if (key === 'mx' && value) mx.push(value.toLowerCase().replace(/\.$/, ''));
  }
  if (version !== 'STSv1') return { error: `version is not STSv1 (${version ?? 'missing'})` };
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none')
    return { error: `mode must be enforce, testing or none (${mode ?? 'missing'})` };
  if (maxAge === null || !Number.isFinite(maxAge)) return { error: 'max_age missing or not a number' };
  if (mode !== 'none' && mx.length === 0) return { error: 'no mx pattern' };
  return { mode, mx, max_age: Math.min(maxAge, MAX_AGE_LIMIT) };
}

/**
 * Whether an MX host matches a policy pattern (RFC 8461 §4.1): exact, or `*.example.com` matching exactly one more
 * label on the left (`mx1.example.com`, not `a.b.example.com` nor `example.com`). Case and a final dot ignored.
 */
export function stsMxMatches(host: string, patterns: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((p) => {
    if (!p.startsWith('*.')) return h === p;
    const dot = h.indexOf('.');
    return dot > 0 && h.slice(dot + 1) === p.slice(2);
  });
}
