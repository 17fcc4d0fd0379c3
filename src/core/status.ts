// The email and recipient state machine: one table of allowed moves, one transition function, the
// operator's queue actions (hold/release/retry/purge) and the aggregation into the email status (decisions.md). Pure.
export const STATUSES = [
  'queued',
  'sent',
  'delivered',
  'delivery_delayed',
  'bounced',
  'complained',
  'failed',
  'canceled',
] as const;
export type Status = (typeof STATUSES)[number];
export const EVENT_TYPES = [...STATUSES, 'opened', 'clicked'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** Alert events (decisions.md "Domain and IP alerts"), not about an email. */
export const ALERT_EVENT_TYPES = ['domain.alert', 'ip.alert'] as const;
export type AlertEventType = (typeof ALERT_EVENT_TYPES)[number];
/** Mail received at a team's domain (docs/receiving.md), not about an email we sent. */
export const INBOUND_EVENT_TYPES = ['inbound.received'] as const;
/** What a webhook endpoint can subscribe to. */
export const WEBHOOK_EVENT_TYPES = [...EVENT_TYPES, ...ALERT_EVENT_TYPES, ...INBOUND_EVENT_TYPES] as const;

/** Email-level moves allowed by interface.md. */
const EMAIL_MOVES: Record<Status, readonly Status[]> = {
  queued: ['sent', 'failed', 'canceled'],
  sent: ['delivered', 'delivery_delayed', 'bounced', 'failed'],
  delivery_delayed: ['delivered', 'bounced'],
  delivered: ['complained'],
  bounced: [],
  complained: [],
  failed: [],
  canceled: [],
};

export const FINAL: ReadonlySet<Status> = new Set(['delivered', 'bounced', 'complained', 'failed', 'canceled']);

export function canMove(from: Status, to: Status): boolean {
  return EMAIL_MOVES[from].includes(to);
}

/** What happened to one recipient. */
export type RecipientEvent =
  'accepted' | 'deferred' | 'rejected' | 'failed' | 'canceled' | 'expired' | 'complaint' | 'async_bounce';

const RECIPIENT_MOVES: Record<Status, Partial<Record<RecipientEvent, Status>>> = {
  queued: {
    accepted: 'delivered',
    deferred: 'delivery_delayed',
    rejected: 'bounced',
    failed: 'failed',
    canceled: 'canceled',
    expired: 'bounced',
  },
  sent: {
    accepted: 'delivered',
    deferred: 'delivery_delayed',
    rejected: 'bounced',
    failed: 'failed',
    expired: 'bounced',
  },
  delivery_delayed: {
    accepted: 'delivered',
    deferred: 'delivery_delayed',
    rejected: 'bounced',
    failed: 'failed',
    expired: 'bounced',
  },
  delivered: { complaint: 'complained', async_bounce: 'delivered' },
  bounced: {},
  complained: {},
  failed: {},
  canceled: {},
};

/** The recipient's next state, or null when the event does not apply in that state. */
export function recipientTransition(from: Status, event: RecipientEvent): Status | null {
  return RECIPIENT_MOVES[from][event] ?? null;
}

/** The status the recipients' states call for (decisions.md, "Status of an email with several recipients"). */
export function aggregate(recipients: readonly Status[]): Status {
  if (recipients.length === 0) return 'queued';
  if (recipients.every((s) => FINAL.has(s))) {
    if (recipients.every((s) => s === 'canceled')) return 'canceled';
    if (recipients.includes('bounced')) return 'bounced';
    if (recipients.includes('complained')) return 'complained';
    if (recipients.includes('delivered')) return 'delivered';
    return 'failed';
  }
  if (recipients.includes('delivery_delayed') && !recipients.includes('bounced')) return 'delivery_delayed';
  if (recipients.some((s) => s !== 'queued')) return 'sent';
  return 'queued';
}

/**
 * The moves (in order) that take an email from `current` to `target` along allowed edges, the
 * shortest way (queued → sent → delivered, for example). Empty when the email cannot move there.
 */
export function emailPath(current: Status, target: Status, operator = false): Status[] {
  if (current === target) return [];
  // An operator's purge: the one delivery_delayed → failed move interface.md does not list (operations.md).
  if (operator && current === 'delivery_delayed' && target === 'failed') return ['failed'];
  const prev = new Map<Status, Status>([[current, current]]);
  const queue: Status[] = [current];
  while (queue.length) {
    const s = queue.shift()!;
    for (const n of EMAIL_MOVES[s])
      if (!prev.has(n)) {
        prev.set(n, s);
        queue.push(n);
      }
  }
  if (!prev.has(target)) {
    // A deferred email whose last recipients fail without any bounce: interface.md has no
    // delivery_delayed → failed edge, so it ends as bounced (docs/api.md).
    return current === 'delivery_delayed' && target === 'failed' ? ['bounced'] : [];
  }
  const path: Status[] = [];
  for (let s = target; s !== current; s = prev.get(s)!) path.unshift(s);
  return path;
}

/**
 * Where a waiting recipient is in the queue (operations.md "Queue control"). `held` comes first: a held
 * recipient is never claimed. `in_flight`: claimed under a lease that lies ahead. `scheduled`: never
 * attempted and not yet due (a scheduled send); `deferred`: attempted before, waiting for its retry.
 */
export const QUEUE_STATES = ['scheduled', 'due', 'deferred', 'held', 'in_flight'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];
export const QUEUE_ACTIONS = ['hold', 'release', 'retry', 'purge'] as const;
export type QueueAction = (typeof QUEUE_ACTIONS)[number];

/** Who placed a hold, or who acts on the queue (operations.md "Queue control"). */
export type Holder = 'team' | 'operator';

export interface Waiting {
  status: Status;
  held: boolean;
  /** Who placed the hold (a hold that does not say is the operator's). */
  heldBy?: Holder | null;
  attempts: number;
  nextAttemptAt: number | null;
  leasedUntil: number | null;
}

export function queueState(r: Waiting, now: number): QueueState | null {
  if (FINAL.has(r.status)) return null;
  if (r.held) return 'held';
  if (r.leasedUntil !== null && r.leasedUntil > now) return 'in_flight';
  if (r.nextAttemptAt === null || r.nextAttemptAt <= now) return 'due';
  return r.attempts > 0 ? 'deferred' : 'scheduled';
}

/** A recipient after an operator action: its status, whether it is held, whether it is due at once. */
export interface QueueMove {
  status: Status;
  held: boolean;
  /** Who holds it after the action (null: not held). */
  heldBy: Holder | null;
  due: boolean;
}

/**
 * The queue-action table: which queue states each action applies to. `hold` takes any waiting recipient
 * not yet held (one in flight finishes its attempt, then waits held); `release` only held ones (due at once);
 * `retry` only deferred ones (due at once: the backoff is skipped); `purge` any waiting one, held or not
 * (it ends `failed`, reason `purged`). Held time counts toward MTA_QUEUE_LIFETIME_SECONDS (as Postfix counts
 * from arrival), but a held recipient is never attempted, so it never expires while held: once released it
 * gets one more attempt, and a deferral then ends it as expired. Who may act on a hold: queueTransition.
 */
const QUEUE_MOVES: Record<QueueAction, readonly QueueState[]> = {
  hold: ['scheduled', 'due', 'deferred', 'in_flight'],
  release: ['held'],
  retry: ['deferred'],
  purge: ['scheduled', 'due', 'deferred', 'held', 'in_flight'],
};

/**
 * The recipient after `action` by `by`, or null when the action does not apply in its state. A hold remembers who
 * placed it: a team releases only its own holds (the operator's stay: null), the operator releases both, and the
 * operator's hold on a team-held recipient makes the hold the operator's (a team's hold never replaces one).
 */
export function queueTransition(
  r: Waiting,
  action: QueueAction,
  now: number,
  by: Holder = 'operator',
): QueueMove | null {
  const state = queueState(r, now);
  if (state === null || !appliesTo(action, by).includes(state)) return null;
  const holder = r.heldBy ?? 'operator';
  switch (action) {
    case 'hold':
      if (state === 'held' && holder === by) return null;
      return { status: r.status, held: true, heldBy: by, due: false };
    case 'release':
      if (by === 'team' && holder === 'operator') return null;
      return { status: r.status, held: false, heldBy: null, due: true };
    case 'retry':
      return { status: r.status, held: false, heldBy: null, due: true };
    case 'purge':
      return { status: 'failed', held: false, heldBy: null, due: false };
  }
}

/** The queue states an action by `by` applies to (the store selects candidates by them). */
export const appliesTo = (action: QueueAction, by: Holder = 'operator'): readonly QueueState[] =>
  action === 'hold' && by === 'operator' ? [...QUEUE_MOVES.hold, 'held'] : QUEUE_MOVES[action];
