// TLS reporting (RFC 8460) pieces that need no I/O: the `_smtp._tls` TXT record's rua URIs, the report mail's
// subject and its attachment's file name.

/** The rua URIs (mailto:, https:) of a domain's `_smtp._tls` TXT strings; null when none is a TLSRPTv1 record. */
export function tlsrptRua(txts: readonly string[]): string[] | null {
  const records = txts.filter((t) => /^v=TLSRPTv1\s*(;|$)/.test(t.trim()));
  if (records.length !== 1) return null; // RFC 8460 §3: several records → none applies
  const rua = records[0]
    .split(';')
    .map((f) => f.trim())
    .find((f) => /^rua=/i.test(f));
  if (!rua) return null;
  const uris = rua
    .slice(4)
    .split(',')
    .map((u) => u.trim())
    .filter((u) => /^(mailto:[^\s@]+@[^\s@]+|https:\/\/\S+)$/i.test(u));
  return uris.length ? uris : null;
}

/** RFC 8460 §5.3 subject. */
export const tlsrptSubject = (domain: string, submitter: string, reportId: string) =>
  `Report Domain: ${domain} Submitter: ${submitter} Report-ID: <${reportId}>`;

/** RFC 8460 §5.1 file name: submitter!policy-domain!begin!end.json.gz (seconds since the epoch). */
export const tlsrptFilename = (submitter: string, domain: string, startMs: number, endMs: number) =>
  `${submitter}!${domain}!${Math.floor(startMs / 1000)}!${Math.floor(endMs / 1000)}.json.gz`;
