// Ready queues of the delivery loop: recipients resolved to a site, waiting for the scheduler to start them,
// one queue per (site, lane IP list), FIFO; per-site counts; which domains to leave in the store for now.
import type { TlsPlan } from './mta-sts.js';
import type { Claimed, EmailRow } from '../services/delivery.js';

export interface Item {
  email: EmailRow;
  rcpt: Claimed;
  hosts: readonly string[];
  raw: Buffer;
  returnDomain: string;
  /** the recipient domain's TLS (outbound/mta-sts.ts) */
  tls?: TlsPlan;
  /** when it joined the queue; how often a blocklist reply moved it to another IP */
  since: number;
  moves: number;
}

/**
 * A backlog over a quarter of the loop's memory whose oldest item has waited SLOW_MS, and which would take over
 * DRAIN_MS to drain at the rate the queue started items in the last second, is slow: its domains are not claimed for
 * now. A site that drains as fast as it fills (one busy domain) is never slow; but no queue may hold more than half
 * of the loop's memory waiting (FULL_SHARE), however fast it drains: a burst to a site that stalls would otherwise
 * fill the memory before it is seen to be slow (within SLOW_MS), and leave no room to claim any other domain's mail
 * until its sessions time out.
 */
const SLOW_MS = 1000;
const DRAIN_MS = 2000;
const FULL_SHARE = 0.5;
/** How many of one site's (or one domain's, while their MX is looked up) recipients make it full. */
export function fullAt(maxHeld: number): number {
  return Math.max(20, maxHeld * FULL_SHARE);
}

export class ReadyQueue {
  private items: Item[] = [];
  private head = 0;
  inFlight = 0;
  /** items started in the current and the previous second (`window` is the current second's number) */
  private window = 0;
  private startsNow = 0;
  private startsBefore = 0;
  readonly domains = new Set<string>();
  constructor(
    readonly key: string,
    readonly site: string,
    readonly ips: readonly string[],
    readonly own: boolean,
    readonly mx: readonly string[],
  ) {}

  get length(): number {
    return this.items.length - this.head;
  }
  push(i: Item): void {
    this.items.push(i);
    this.domains.add(i.rcpt.domain);
  }
  unshift(i: Item): void {
    if (this.head > 0) this.items[--this.head] = i;
    else this.items.unshift(i);
  }
  shift(now?: number): Item | undefined {
    if (this.head >= this.items.length) return undefined;
    if (now !== undefined) this.countStart(now);
    const i = this.items[this.head];
    this.items[this.head++] = undefined as unknown as Item;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return i;
  }
  /** Removes and returns the waiting items `pick` selects. */
  take(pick: (i: Item) => boolean): Item[] {
    const rest = this.drain();
    const out = rest.filter(pick);
    this.items = rest.filter((i) => !pick(i));
    return out;
  }
  private countStart(now: number): void {
    const w = Math.floor(now / 1000);
    if (w !== this.window) {
      this.startsBefore = w === this.window + 1 ? this.startsNow : 0;
      this.startsNow = 0;
      this.window = w;
    }
    this.startsNow++;
  }
  /** Items started per second lately: the last whole second's count (or the current one's, when higher). */
  startRate(now: number): number {
    const w = Math.floor(now / 1000);
    if (w === this.window) return Math.max(this.startsBefore, this.startsNow);
    return w === this.window + 1 ? this.startsNow : 0;
  }
  /** Half of `maxHeld` or more; or over a quarter, its oldest waiting over SLOW_MS, and more than DRAIN_MS of work at its rate. */
  isSlow(now: number, maxHeld: number): boolean {
    const n = this.length;
    if (n >= fullAt(maxHeld)) return true;
    if (n < Math.max(20, maxHeld / 4) || now - (this.peek()?.since ?? now) <= SLOW_MS) return false;
    return n > (this.startRate(now) * DRAIN_MS) / 1000;
  }
  peek(): Item | undefined {
    return this.items[this.head];
  }
  drain(): Item[] {
    const out = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return out;
  }
}

export class ReadyQueues {
  private queues = new Map<string, ReadyQueue>();
  private sites = new Map<string, readonly string[]>();
  private domainsOf = new Map<string, Set<string>>();

  /** The queue of (site, IPs), created on first use. */
  queue(site: string, ips: readonly string[], own: boolean, mx: readonly string[]): ReadyQueue {
    const key = `${site}\n${ips.join(',')}`;
    let q = this.queues.get(key);
    if (!q) {
      q = new ReadyQueue(key, site, ips, own, mx);
      this.queues.set(key, q);
    }
    this.sites.set(site, mx);
    return q;
  }

  /** Notes that `domain` belongs to `site` (to wake its waiting mail when the site resumes). */
  noteDomain(site: string, domain: string): void {
    const s = this.domainsOf.get(site) ?? new Set<string>();
    if (s.size < 1000) s.add(domain);
    this.domainsOf.set(site, s);
  }

  domains(site: string): string[] {
    return [...(this.domainsOf.get(site) ?? [])];
  }

  get(key: string): ReadyQueue | undefined {
    return this.queues.get(key);
  }
  all(): ReadyQueue[] {
    return [...this.queues.values()];
  }
  /** MX patterns (rule sites) or hosts (other sites) of every site seen. */
  siteMx(): Map<string, readonly string[]> {
    return this.sites;
  }

  get total(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  bySite(): Map<string, { queued: number; inFlight: number }> {
    const out = new Map<string, { queued: number; inFlight: number }>();
    for (const q of this.queues.values()) {
      const c = out.get(q.site) ?? { queued: 0, inFlight: 0 };
      c.queued += q.length;
      c.inFlight += q.inFlight;
      out.set(q.site, c);
    }
    return out;
  }

  /** Domains of slow queues (ReadyQueue.isSlow): left in the store for now. */
  slowDomains(now: number, maxHeld: number): string[] {
    const out: string[] = [];
    for (const q of this.queues.values()) if (q.isSlow(now, maxHeld)) out.push(...q.domains);
    return out;
  }

  /** Forgets queues with nothing waiting or in flight (their lanes stay in the scheduler). */
  prune(): void {
    for (const [k, q] of this.queues) if (q.length === 0 && q.inFlight === 0) this.queues.delete(k);
  }

  drainAll(): Item[] {
    return [...this.queues.values()].flatMap((q) => q.drain());
  }
}
