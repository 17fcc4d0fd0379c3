// Identifier formats: `<prefix>_` + 10 chars of time + 16 random chars, Crockford base32 lower case,
// so ids sort by creation time. Pure apart from the random bytes it is given or draws.
import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix =
  'em' | 'dl' | 'evt' | 'key' | 'team' | 'dom' | 'wh' | 'whd' | 'gr' | 'sup' | 'rep' | 'dmr' | 'in';

/**
 * 10 fresh random bytes, cut from a pool refilled 4 KiB at a time (one system call per ~400 ids instead of one per
 * id: an accepted email draws three). Each slice is handed out once.
 */
const POOL = Buffer.alloc(4096);
let used = POOL.length;
/** `n` (≤ 64) fresh random bytes from the pool (ids; MIME boundaries). */
export function pooledRandom(n: number): Buffer {
  if (used + n > POOL.length) {
    randomFillSync(POOL);
    used = 0;
  }
  used += n;
  return POOL.subarray(used - n, used);
}
const random10 = () => pooledRandom(10);

export function newId(prefix: IdPrefix, nowMs: number, random: Buffer = random10()): string {
  let t = Math.floor(nowMs);
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let rnd = '';
  let acc = 0,
    bits = 0;
  for (const byte of random) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      rnd += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return `${prefix}_${time}${rnd.slice(0, 16)}`;
}
