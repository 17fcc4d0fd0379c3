// The pure delivery-scheduling core: ready queues per site, per-(IP, site) connections, spacing, reactions and
// warm-up caps → the next (site, IP) to send one message, round-robin across queues, and when to ask again.
import { Spacing, intervalOf } from './bucket.js';
import {
  classifyReply,
  openState,
  react,
  refresh,
  resume,
  stateOf,
  suspend,
  throttledConnections,
  type LaneStateName,
  type ReactionState,
} from './reactions.js';
import type { Limits, Reaction, Shaping } from './rules.js';
import { capToday, nextDayAt, utcDay, type Warmup } from './warmup.js';

/** One (source IP, site): its connections, spacing, reaction state and today's count. */
export interface Lane {
  readonly ip: string;
  readonly site: string;
  /** connections open (busy or idle) and busy (a message in flight) */
  open: number;
  busy: number;
  readonly spacing: Spacing;
  readonly reaction: ReactionState;
  /** messages started today (UTC day `day`): the warm-up count */
  day: number;
  sentToday: number;
}

interface Queue {
  key: string;
  site: string;
  ips: readonly string[];
  lanes: Lane[];
  ready: number;
  limits: Limits;
  inRing: boolean;
}

/**
 * A decision: send one message of queue `queue` (site `site`) from `ip`, on a new connection or an idle one.
 * The same object is reused by every call of `next`: copy what you keep.
 */
export interface Decision {
  queue: string;
  site: string;
  ip: string;
  newConnection: boolean;
  lane: Lane;
}

export interface LaneView {
  ip: string;
  state: LaneStateName;
  until: number | null;
  reason: string | null;
  rate: number | null;
  open: number;
  busy: number;
  sentToday: number;
}

export class Scheduler {
  private readonly queues = new Map<string, Queue>();
  /** queues with ready work, served round-robin from `cursor` */
  private readonly ring: Queue[] = [];
  private cursor = 0;
  private readonly lanes = new Map<string, Lane>();
  private readonly warming = new Map<string, Warmup>();
  /** operator suspensions of a whole site (every IP), applied to lanes created later too */
  private readonly siteHolds = new Map<string, { until: number; reason: string }>();
  /** IPs suspended on every site (a DNSBL listing: reason `dnsbl:<zone>`), applied to lanes created later too */
  private readonly ipHolds = new Map<string, string>();
  private wake = Infinity;
  private readonly decision: Decision = {
    queue: '',
    site: '',
    ip: '',
    newConnection: false,
    lane: undefined as unknown as Lane,
  };

  constructor(private readonly shaping: Shaping) {}

  /**
   * Sets a ready queue: `ready` messages of `site` that may leave from `ips`, in preference order (the first is
   * the queue's usual IP; later ones take its traffic only while it is blocklisted or at its warm-up cap).
   * A site may have several queues (one per IP pool, say); each takes its own turn.
   */
  setQueue(key: string, site: string, ips: readonly string[], ready: number): void {
    let q = this.queues.get(key);
    if (!q || q.site !== site) {
      if (q) this.drop(q);
      q = {
        key,
        site,
        ips,
        lanes: ips.map((ip) => this.lane(ip, site)),
        ready,
        limits: this.shaping.limitsOf(site),
        inRing: false,
      };
      this.queues.set(key, q);
    } else {
      if (q.ips !== ips) {
        q.ips = ips;
        q.lanes = ips.map((ip) => this.lane(ip, site));
      }
      q.ready = ready;
    }
    if (ready > 0 && !q.inRing) {
      q.inRing = true;
      this.ring.push(q);
    }
    if (ready <= 0) this.drop(q);
  }

  /** Forgets a queue (its lanes stay: connections and reaction state belong to (IP, site)). */
  private drop(q: Queue): void {
    this.queues.delete(q.key);
    if (!q.inRing) return;
    q.inRing = false;
    const idx = this.ring.indexOf(q);
    this.ring.splice(idx, 1);
    if (idx < this.cursor) this.cursor--;
    if (this.cursor >= this.ring.length) this.cursor = 0;
  }

  /** Adds `n` messages to a queue (creating it). */
  add(key: string, site: string, ips: readonly string[], n: number): void {
    this.setQueue(key, site, ips, (this.queues.get(key)?.ready ?? 0) + n);
  }

  /** Ready messages of a queue. */
  ready(key: string): number {
    return this.queues.get(key)?.ready ?? 0;
  }

  /**
   * The next message to start at `now`, or null when none may start now; then `wakeAt()` tells when one
   * may (Infinity: only after `done`, `setQueue` or an operator action).
   */
  next(now: number): Decision | null {
    this.wake = Infinity;
    const n = this.ring.length;
    for (let i = 0; i < n; i++) {
      const idx = (this.cursor + i) % n;
      const q = this.ring[idx];
      if (q.ready <= 0) continue;
      const lane = this.pick(q, now);
      if (!lane) continue;
      this.start(q, lane, now);
      this.cursor = (idx + 1) % n;
      if (q.ready <= 0) this.drop(q);
      return this.decision;
    }
    return null;
  }

  /** When `next` may next return a decision, as of its last null answer (ms; Infinity: on an event only). */
  wakeAt(): number {
    return this.wake;
  }

  /** A message finished on (ip, site); `closed`: its connection is gone too (error, QUIT, per-connection limit). */
  done(ip: string, site: string, closed: boolean): void {
    const l = this.lanes.get(laneKey(ip, site));
    if (!l) return;
    if (l.busy > 0) l.busy--;
    if (closed && l.open > 0) l.open--;
  }

  /** The connections (ip, site) may hold now (its limit, cut while throttled). */
  connections(ip: string, site: string): number {
    const l = this.lanes.get(laneKey(ip, site));
    return throttledConnections(this.shaping.limitsOf(site).connections, l ? l.reaction.factor : 1);
  }

  /** An idle connection of (ip, site) was closed (idle time-out). */
  closed(ip: string, site: string): void {
    const l = this.lanes.get(laneKey(ip, site));
    if (l && l.open > l.busy) l.open--;
  }

  /** Whether an idle connection of (ip, site) is over the current (possibly throttled) connection limit. */
  shouldClose(ip: string, site: string, now: number): boolean {
    const l = this.lanes.get(laneKey(ip, site));
    if (!l) return false;
    refresh(l.reaction, now);
    return l.open > throttledConnections(this.shaping.limitsOf(site).connections, l.reaction.factor);
  }

  /** Classifies a reply from (ip, site) and applies the reaction it triggers; returns it (undefined: none). */
  reply(ip: string, site: string, reply: string, now: number): Reaction | undefined {
    const r = classifyReply(reply, site, this.shaping.reactions);
    if (r) react(this.lane(ip, site).reaction, r.action, r.seconds, now, reply.slice(0, 200));
    return r;
  }

  /** Operator: suspend a site for the IPs given, or for every IP (`ips` empty: also IPs it has no lane on yet). */
  suspendSite(site: string, ips: readonly string[], seconds: number | null, reason: string, now: number): void {
    if (!ips.length) this.siteHolds.set(site, { until: seconds === null ? Infinity : now + seconds * 1000, reason });
    for (const l of this.lanesOf(site, ips)) suspend(l.reaction, now, seconds, reason);
  }

  /** Operator: resume a site for the IPs given, or for every IP (`ips` empty). */
  resumeSite(site: string, ips: readonly string[]): void {
    if (!ips.length) this.siteHolds.delete(site);
    for (const l of this.lanesOf(site, ips)) {
      resume(l.reaction);
      const held = this.ipHolds.get(l.ip); // a DNSBL hold stands until a check finds the IP delisted
      if (held) holdLane(l, held);
    }
  }

  /**
   * Suspends `ip` on every site until released (its traffic moves to the pool's other IPs, as on a blocklist
   * reply); a different reason replaces the previous one.
   */
  holdIp(ip: string, reason: string): void {
    this.ipHolds.set(ip, reason);
    for (const l of this.lanes.values()) if (l.ip === ip) holdLane(l, reason);
  }

  /** Ends an IP hold: the lanes it suspended (still with its reason) are open again. */
  releaseIp(ip: string): void {
    const reason = this.ipHolds.get(ip);
    this.ipHolds.delete(ip);
    for (const l of this.lanes.values()) if (l.ip === ip && l.reaction.reason === reason) resume(l.reaction);
  }

  /** Starts (or restarts) an IP's warm-up at `day`; null stops it (the IP is warm). */
  setWarmup(ip: string, w: Warmup | null): void {
    if (w) this.warming.set(ip, w);
    else this.warming.delete(ip);
  }

  warmup(ip: string): Warmup | undefined {
    return this.warming.get(ip);
  }

  /** Seeds today's count of (ip, site) (after a restart, from the store). */
  setSentToday(ip: string, site: string, n: number, now: number): void {
    const l = this.lane(ip, site);
    l.day = utcDay(now);
    l.sentToday = n;
  }

  /** The lane of (ip, site), created on first use. */
  lane(ip: string, site: string): Lane {
    const key = laneKey(ip, site);
    let l = this.lanes.get(key);
    if (!l) {
      l = { ip, site, open: 0, busy: 0, spacing: new Spacing(), reaction: openState(), day: -1, sentToday: 0 };
      const hold = this.siteHolds.get(site);
      if (hold) {
        l.reaction.suspendedUntil = hold.until;
        l.reaction.reason = hold.reason;
      }
      const ipHold = this.ipHolds.get(ip);
      if (ipHold) holdLane(l, ipHold);
      this.lanes.set(key, l);
    }
    return l;
  }

  /** What `mta sites` shows per IP of a site: state, until (ms or null), reason, effective rate (per ms). */
  view(site: string, now: number): LaneView[] {
    const perMs = this.shaping.limitsOf(site).perMs;
    return this.lanesOf(site, []).map((l) => {
      refresh(l.reaction, now);
      const state = stateOf(l.reaction, now);
      const until = state === 'suspended' && l.reaction.suspendedUntil !== Infinity ? l.reaction.suspendedUntil : null;
      return {
        ip: l.ip,
        state,
        until,
        reason: l.reaction.reason,
        rate: perMs === null ? null : perMs * l.reaction.factor,
        open: l.open,
        busy: l.busy,
        sentToday: l.day === utcDay(now) ? l.sentToday : 0,
      };
    });
  }

  private lanesOf(site: string, ips: readonly string[]): Lane[] {
    if (ips.length) return ips.map((ip) => this.lane(ip, site));
    return [...this.lanes.values()].filter((l) => l.site === site);
  }

  /**
   * The lane a queue sends from now, or null (recording in `wake` when that may change). The queue's IP is the
   * first in order neither blocklisted for the site nor at its warm-up cap (after the first, warm IPs only);
   * it sends when not suspended, with a connection free and its spacing elapsed.
   */
  private pick(q: Queue, now: number): Lane | null {
    for (let k = 0; k < q.ips.length; k++) {
      const l = q.lanes[k];
      const w = this.warming.size ? this.warming.get(l.ip) : undefined;
      const cap = w ? capToday(this.shaping.warmup.schedule, w, now) : null;
      if (k > 0 && cap !== null) continue;
      const r = l.reaction;
      refresh(r, now);
      if (r.blocklisted) {
        this.later(r.suspendedUntil);
        continue;
      }
      if (cap !== null && (l.day === utcDay(now) ? l.sentToday : 0) >= cap) {
        this.later(nextDayAt(now));
        continue;
      }
      if (r.suspendedUntil !== 0) {
        this.later(r.suspendedUntil);
        return null;
      }
      const depth = sendAhead(r.factor, q.limits.perMs);
      if (l.busy >= throttledConnections(q.limits.connections, r.factor) * depth) return null; // woken by done()
      const wait = l.spacing.waitMs(intervalOf(q.limits.perMs, r.factor), now);
      if (wait > 0) {
        this.later(now + wait);
        return null;
      }
      return l;
    }
    return null;
  }

  private later(t: number): void {
    if (t < this.wake) this.wake = t;
  }

  private start(q: Queue, l: Lane, now: number): void {
    q.ready--;
    l.spacing.take(intervalOf(q.limits.perMs, l.reaction.factor), now);
    const day = utcDay(now);
    if (l.day !== day) {
      l.day = day;
      l.sentToday = 0;
    }
    l.sentToday++;
    const d = this.decision;
    // Beyond the connection limit, a message waits for one of the lane's sessions (SEND_AHEAD): no new connection.
    d.newConnection = l.busy >= l.open && l.open < throttledConnections(q.limits.connections, l.reaction.factor);
    if (d.newConnection) l.open++;
    l.busy++;
    d.queue = q.key;
    d.site = q.site;
    d.ip = l.ip;
    d.lane = l;
  }
}

const laneKey = (ip: string, site: string) => `${ip} ${site}`;

/**
 * Messages in flight per connection of a lane at full speed: one on the wire and one waiting for that session,
 * handed to it the moment its transaction ends (the SMTP client holds the lane to its connection limit,
 * SendOptions.maxSessions). The session never waits for a round trip through the delivery loop. A throttled or
 * recovering lane (factor < 1) keeps one per connection, so a site that pushed back gets no queue of extra tries; so
 * does a site with a rate, whose spacing is its limit (a message held back for a session would leave later than its
 * slot, and the next one closer behind it than the rate allows).
 */
export const SEND_AHEAD = 2;
const sendAhead = (factor: number, perMs: number | null) => (factor >= 1 && perMs === null ? SEND_AHEAD : 1);

function holdLane(l: Lane, reason: string): void {
  l.reaction.suspendedUntil = Infinity;
  l.reaction.blocklisted = true;
  l.reaction.reason = reason;
}
