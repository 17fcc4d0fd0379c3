// Types for the mailauth 4.13 internals the fast DKIM signer builds on (the package ships no
// typings for them). Only what src/outbound/dkim.ts and src/services/dmarc-auth.ts use.
declare module 'mailauth/lib/tools.js' {
  export interface ParsedHeader {
    key: string;
    casedKey: string;
    line: Buffer;
  }
  export function parseHeaders(buf: Buffer): { parsed: ParsedHeader[]; original: Buffer };
  export function getSigningHeaderLines(
    parsed: ParsedHeader[],
    fieldNames?: string | false,
  ): { keys: string; headers: ParsedHeader[] };
  export function formatSignatureHeaderLine(type: string, values: Record<string, unknown>, folded: boolean): string;
  /** The first entry whose organisational domain is `fromDomain`'s (relaxed), or false (services/dmarc-auth.ts). */
  export function getAlignment(
    fromDomain: string,
    domainList: (string | { domain: string })[],
    strict?: boolean,
  ): { domain: string } | false;
}
declare module 'mailauth/lib/dkim/body/index.js' {
  export function dkimBody(
    canonicalization: string,
    hashAlgo: string,
    maxBodyLength: number | false,
  ): { update(chunk: Buffer): void; digest(enc: 'base64'): string };
}
declare module 'mailauth/lib/dkim/header/index.js' {
  export function generateCanonicalizedHeader(
    type: string,
    lines: { keys: string; headers: unknown[] },
    options: Record<string, unknown>,
  ): { canonicalizedHeader: Buffer; dkimHeaderOpts: Record<string, unknown> };
}
declare module 'mailauth/lib/dkim/sign.js' {
  export function dkimSign(
    input: Buffer | string,
    options: Record<string, unknown>,
  ): Promise<{ signatures: string; errors: unknown[] }>;
}
