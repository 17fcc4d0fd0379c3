// Adaptive throttling: which reaction a reply triggers (first matching rule), and the per-(IP, site) state
// machine open → throttled (rate halved per reply, doubled back each quiet step) → suspended until T → open.
import type { Reaction } from './rules.js';

export type LaneStateName = 'open' | 'throttled' | 'suspended';

/** Reaction state of one (source IP, site). Mutated in place (allocation-light); times in ms. */
export interface ReactionState {
  /** new attempts wait until then (Infinity: until resumed by the operator); 0 = not suspended */
  suspendedUntil: number;
  /** the suspension came from a blocklist reply: the site's traffic moves to the pool's other IPs */
  blocklisted: boolean;
  /** rate (and connection) multiplier: 1, ½, ¼ … */
  factor: number;
  /** when the factor next doubles, and the step between doublings */
  restoreAt: number;
  stepMs: number;
  reason: string | null;
}

/** Throttle never cuts below 1/1024 of the site's rate. */
export const MIN_FACTOR = 1 / 1024;

export function openState(): ReactionState {
  return { suspendedUntil: 0, blocklisted: false, factor: 1, restoreAt: 0, stepMs: 0, reason: null };
}

/**
 * The first reaction whose `match` finds the reply (code, enhanced code and text) and whose `site`, if any,
 * is this site; undefined when none does. Case-insensitive (rules compile with the `i` flag).
 */
export function classifyReply(reply: string, site: string, reactions: readonly Reaction[]): Reaction | undefined {
  for (const r of reactions) {
    if (r.site !== undefined && r.site !== site) continue;
    r.match.lastIndex = 0;
    if (r.match.test(reply)) return r;
  }
  return undefined;
}

/** Advances `s` to `now`: ends an expired suspension, doubles a throttled factor per step elapsed. */
export function refresh(s: ReactionState, now: number): void {
  if (s.suspendedUntil !== 0 && now >= s.suspendedUntil) {
    s.suspendedUntil = 0;
    s.blocklisted = false;
    if (s.factor >= 1) s.reason = null;
  }
  while (s.factor < 1 && now >= s.restoreAt) {
    s.factor = Math.min(1, s.factor * 2);
    s.restoreAt += s.stepMs;
  }
  if (s.factor >= 1 && s.restoreAt !== 0) {
    s.restoreAt = 0;
    if (s.suspendedUntil === 0) s.reason = null;
  }
}

/** Applies a reaction at `now`. `reason` is what `mta sites` shows (the reply, say). */
export function react(
  s: ReactionState,
  action: Reaction['action'],
  seconds: number,
  now: number,
  reason: string,
): void {
  refresh(s, now);
  const ms = seconds * 1000;
  s.reason = reason;
  if (action === 'throttle') {
    s.factor = Math.max(MIN_FACTOR, s.factor / 2);
    s.stepMs = ms;
    s.restoreAt = now + ms;
    return;
  }
  const until = now + ms;
  if (until > s.suspendedUntil || s.suspendedUntil === 0) s.suspendedUntil = until;
  if (action === 'blocklist') s.blocklisted = true;
}

/** Operator suspension: `seconds` null suspends until resumed. */
export function suspend(s: ReactionState, now: number, seconds: number | null, reason: string): void {
  s.suspendedUntil = seconds === null ? Infinity : now + seconds * 1000;
  s.reason = reason;
}

/** Operator resumption: back to open at once (suspension, blocklisting and throttle cleared). */
export function resume(s: ReactionState): void {
  s.suspendedUntil = 0;
  s.blocklisted = false;
  s.factor = 1;
  s.restoreAt = 0;
  s.reason = null;
}

/** The state name at `now` (call refresh first). */
export function stateOf(s: ReactionState, now: number): LaneStateName {
  if (s.suspendedUntil !== 0 && now < s.suspendedUntil) return 'suspended';
  return s.factor < 1 ? 'throttled' : 'open';
}

/** A connection limit cut by the throttle factor (at least one). */
export function throttledConnections(connections: number, factor: number): number {
  return factor >= 1 ? connections : Math.max(1, Math.floor(connections * factor));
}
