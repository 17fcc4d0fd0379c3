// The email and recipient state machine: one table of allowed moves, one transition function,
// and the aggregation of recipient states into the email status (decisions.md). Pure.
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
export function emailPath(current: Status, target: Status): Status[] {
  if (current === target) return [];
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
