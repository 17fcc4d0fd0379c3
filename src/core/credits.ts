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

/** Calendar month key (UTC) of a time, e.g. "2026-11". */
export const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

/** A grant's expiry: 12 months after purchase. */
export function grantExpiry(ms: number): number {
  const d = new Date(ms);
  d.setUTCFullYear(d.getUTCFullYear() + 1);
  return d.getTime();
}
