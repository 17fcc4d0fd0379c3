// Credit arithmetic: the free monthly allowance first, then bought grants oldest first.
// Pure: callers pass the balance they read and persist the allocation they get back.
export interface GrantBalance {
  id: string;
  remaining: number;
  expiresAt: number;
  createdAt: number;
}
export interface Allocation {
  grantId: string | null;
  amount: number;
} // null = free allowance

export function allocate(
  needed: number,
  freeRemaining: number,
  grants: readonly GrantBalance[],
  nowMs: number,
): Allocation[] | null {
  const out: Allocation[] = [];
  let left = needed;
  const free = Math.min(left, Math.max(0, freeRemaining));
  if (free > 0) {
    out.push({ grantId: null, amount: free });
    left -= free;
  }
  const usable = grants.filter((g) => g.remaining > 0 && g.expiresAt > nowMs).sort((a, b) => a.createdAt - b.createdAt); // stable: ties keep the store's order
  for (const g of usable) {
    if (left === 0) break;
    const take = Math.min(left, g.remaining);
    out.push({ grantId: g.id, amount: take });
    left -= take;
  }
  return left === 0 ? out : null;
}

export function available(freeRemaining: number, grants: readonly GrantBalance[], nowMs: number): number {
  return Math.max(0, freeRemaining) + grants.filter((g) => g.expiresAt > nowMs).reduce((n, g) => n + g.remaining, 0);
}

/** The last month asked for, [from, to) in ms: two charges' reads per accept ask for the same one (a memo). */
let lastMonth = { from: 0, to: 0, key: '' };
/** Calendar month key (UTC) of a time, e.g. "2026-11". */
export function monthOf(ms: number): string {
  if (ms >= lastMonth.from && ms < lastMonth.to) return lastMonth.key;
  const d = new Date(ms);
  const key = d.toISOString().slice(0, 7);
  const [y, m] = [d.getUTCFullYear(), d.getUTCMonth()];
  lastMonth = { from: Date.UTC(y, m, 1), to: Date.UTC(y, m + 1, 1), key };
  return key;
}

/** A grant's expiry: 12 months after purchase. */
export function grantExpiry(ms: number): number {
  const d = new Date(ms);
  d.setUTCFullYear(d.getUTCFullYear() + 1);
  return d.getTime();
}
