// HTTP workers and the primary's delivery loop (src/http/cluster.ts; docs/postgres-notes.md "Workers' new mail
// straight to the loop"). In one process, new recipients due now are leased to the loop in their very insert and
// handed to it after the commit (services/delivery.ts Intake), so no claim query has to find them. A worker has no
// loop: it leases them to the primary's instead, under a credit the primary grants while its loop has room and no
// older mail waits in the store, and sends the committed email and its recipients over IPC. The primary's loop takes
// them as if they were its own; when it has no room (any more) it releases them to the store, for its claims.
// A worker that dies between its commit and the message leaves its recipients leased: they are claimed when the
// lease ends, like the recipients of a loop that died.
import type { Claimed, EmailRow, Intake } from '../services/delivery.js';
import { intakeOf, releaseClaims } from '../services/delivery.js';
import type { Ctx } from '../services/context.js';
import { nudged } from '../services/siblings.js';

export interface Handed {
  n: number;
  email: EmailRow;
  rows: Claimed[];
}
export type IntakeMsg =
  { t: 'intake'; items: Handed[] } | { t: 'ask-intake'; have: number } | { t: 'grant'; n: number; leaseMs: number };

/** Recipients a worker may lease to the primary's loop before it hears back (the loop's own room decides on arrival). */
export const INTAKE_CREDIT = 256;
/** A worker without credit asks again at most this often (a refused ask grants nothing). */
const ASK_EVERY_MS = 100;
/** Emails sent whose `queued` event has not been looked at yet: forgotten past this many (never expected). */
const RECENT_MAX = 10_000;

/** The worker's side: an Intake whose loop is the primary's. */
export class RemoteIntake implements Intake {
  private credit = 0;
  private leaseMs = 0;
  private askedAt = -Infinity;
  private readonly recent = new Set<number>();
  /** Sent together once the turn that committed them has handed them all (one IPC message per turn, not per email). */
  private out: Handed[] = [];
  now: () => number = Date.now;

  constructor(private readonly send: (m: IntakeMsg) => void) {}

  reserve(n: number): number | null {
    if (n <= this.credit && this.leaseMs > 0) {
      this.credit -= n;
      return this.now() + this.leaseMs;
    }
    this.ask();
    return null;
  }

  hand(n: number, email: EmailRow | null, rows: Claimed[]): void {
    if (!email || rows.length === 0) {
      this.credit += n; // rolled back: nothing was leased
      return;
    }
    if (this.recent.size >= RECENT_MAX) this.recent.clear();
    this.recent.add(email.seq);
    if (this.out.length === 0)
      queueMicrotask(() => {
        const items = this.out;
        this.out = [];
        this.send({ t: 'intake', items });
      });
    this.out.push({ n, email, rows });
  }

  /** Nothing to do here: the worker's `queued` hook nudges the primary for such mail (features/outbound.ts). */
  notTaken(): void {}

  /** Whether the email's recipients went to the primary's loop (asked once per email, by its `queued` event). */
  handed(seq: number): boolean {
    return this.recent.delete(seq);
  }

  granted(n: number, leaseMs: number): void {
    this.credit += n;
    this.leaseMs = leaseMs;
  }

  private ask(): void {
    const now = Date.now();
    if (now - this.askedAt < ASK_EVERY_MS) return;
    this.askedAt = now;
    this.send({ t: 'ask-intake', have: this.credit });
  }
}

/**
 * The primary's side of a worker's message: recipients sent join the loop (and their credit is granted again), or go
 * back to the store and the loop is woken to claim them; an ask is granted up to INTAKE_CREDIT while the loop is open.
 */
export function intakeFromWorker(ctx: Ctx, m: IntakeMsg, grant: (n: number, leaseMs: number) => void): void {
  const loop = intakeOf(ctx.db);
  if (m.t === 'ask-intake') {
    const until = loop?.reserve(0) ?? null;
    if (until !== null) grant(Math.max(0, INTAKE_CREDIT - m.have), until - ctx.now());
    return;
  }
  if (m.t !== 'intake') return;
  let granted = 0;
  let leaseMs = 0;
  const refused: number[] = [];
  for (const h of m.items) {
    const until = loop?.reserve(h.n) ?? null;
    if (loop && until !== null) {
      loop.hand(h.n, h.email, h.rows);
      granted += h.n;
      leaseMs = until - ctx.now();
    } else refused.push(...h.rows.map((r) => r.id));
  }
  if (granted) grant(granted, leaseMs);
  if (refused.length === 0) return;
  try {
    releaseClaims(ctx.db, refused, ctx.now());
    nudged(ctx.db, 'delivery');
  } catch (err) {
    ctx.log.error({ err: (err as Error).message }, "a worker's new recipients not released (their lease will end)");
  }
}
