// Signed tokens: the one HMAC-SHA256 helper behind every token the service hands out and reads back
// (VERP return paths, tracking links, list cursors): truncated MAC, constant-time check, a key per purpose. Pure.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** What a token is for. Each purpose has its own random key (the store's `secret:<purpose>`), so a MAC of one never verifies as another. */
export type TokenPurpose = 'verp' | 'tracking' | 'cursor';

interface MacFormat {
  bytes: number;
  encoding: 'hex' | 'base64url';
}

/**
 * How much of the HMAC each purpose keeps and how it is written. Fixed: tokens already issued (in sent
 * mail, in clients' saved cursors) must keep verifying.
 */
const FORMATS: Record<TokenPurpose, MacFormat> = {
  verp: { bytes: 8, encoding: 'hex' }, // 64 bits as 16 lower-case hex chars: safe in a local part
  tracking: { bytes: 16, encoding: 'base64url' }, // 128 bits, 22 chars
  cursor: { bytes: 12, encoding: 'base64url' }, // 96 bits, 16 chars
};

export class TokenSigner {
  private format: MacFormat;
  constructor(
    readonly purpose: TokenPurpose,
    private key: Buffer,
  ) {
    if (key.length < 16) throw new Error(`the ${purpose} token key is shorter than 16 bytes`);
    this.format = FORMATS[purpose];
  }

  /** The truncated HMAC-SHA256 of `input` under this purpose's key. */
  mac(input: string): string {
    return createHmac('sha256', this.key)
      .update(input)
      .digest()
      .subarray(0, this.format.bytes)
      .toString(this.format.encoding);
  }

  /** True when `mac` is the MAC of `input`; compared in constant time. */
  verify(input: string, mac: string): boolean {
    const want = Buffer.from(this.mac(input));
    const got = Buffer.from(mac);
    return got.length === want.length && timingSafeEqual(got, want);
  }
}
