// The scheduling core under a simulated clock: rates held in every window, limits shared by the domains of a
// site, round-robin fairness, exact wake-ups (no fixed pauses), throttle/suspend/blocklist and warm-up caps.
import { expect } from 'chai';
import fs from 'node:fs';
import { loadShaping } from '../../src/core/shaping/rules.js';
import { siteMatcher } from '../../src/core/shaping/sites.js';
import { Scheduler, SEND_AHEAD } from '../../src/core/shaping/scheduler.js';
import { DAY_MS } from '../../src/core/shaping/warmup.js';

const BUILT_IN = JSON.parse(fs.readFileSync(new URL('../../config/shaping.json', import.meta.url), 'utf8'));
const T0 = Date.UTC(2030, 0, 1, 10, 0, 0);
const IP = '192.0.2.10';
const IP2 = '192.0.2.11';

interface Sent {
  t: number;
  queue: string;
  site: string;
  ip: string;
  fresh: boolean;
}

/** Runs the scheduler from `start` until `end` (or nothing is left), finishing each message at once. */
function simulate(s: Scheduler, start: number, end: number, max = 1e6): Sent[] {
  const out: Sent[] = [];
  let now = start;
  while (now < end && out.length < max) {
    const d = s.next(now);
    if (d) {
      out.push({ t: now, queue: d.queue, site: d.site, ip: d.ip, fresh: d.newConnection });
      s.done(d.ip, d.site, false);
      continue;
    }
    const w = s.wakeAt();
    expect(w, 'wake-up after a null decision').to.be.greaterThan(now);
    now = w;
  }
  return out;
}

/** The most messages seen in any window of `windowMs` (sorted times). */
function maxInWindow(times: number[], windowMs: number): number {
  let best = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i] - times[j] >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

const withRate = (site: string, rate: string, extra: Record<string, unknown> = {}) =>
  loadShaping(BUILT_IN, { sites: { [site]: { mx: [`*.${site}.example`], rate, connections: 50, ...extra } } });

describe('shaping scheduler: rates over simulated time', () => {
  for (const [rate, perWindow, span] of [
    ['100/min', 60_000, 10 * 60_000],
    ['5000/h', 3_600_000, 2 * 3_600_000],
    ['20000/d', DAY_MS, DAY_MS + 3_600_000],
  ] as const) {
    it(`${rate}: in any window at most one more than the rate allows, evenly spaced, no pauses`, () => {
      const s = new Scheduler(withRate('bulk', rate));
      const n = Number(rate.split('/')[0]);
      s.setQueue('q', 'bulk', [IP], 2 * Math.ceil((span / perWindow) * n));
      const times = simulate(s, T0, T0 + span).map((x) => x.t);
      const gap = perWindow / n;
      for (const w of [gap / 2, gap, 7.5 * gap, perWindow / 3, perWindow]) {
        expect(maxInWindow(times, w), `window ${w} ms`).to.be.at.most(Math.floor(w / gap) + 1);
      }
      // No artificial pause: each message leaves exactly when the spacing allows.
      for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).to.be.closeTo(gap, 1e-6);
      expect(times.length).to.equal(Math.floor(span / gap) + (span % gap === 0 ? 0 : 1));
    });
  }

  it('a site with no rate drains at once up to its connections (and one waiting per connection), then waits only for done()', () => {
    const s = new Scheduler(loadShaping(BUILT_IN));
    s.setQueue('q', 'google', [IP], 20);
    const got: boolean[] = [];
    for (let d = s.next(T0); d; d = s.next(T0)) got.push(d.newConnection);
    const conns = BUILT_IN.sites.google.connections; // 5
    expect(got.length).to.equal(conns * SEND_AHEAD);
    // 5 new connections, then messages that wait for one of them: never more connections than the limit
    expect(got).to.deep.equal([...Array(conns).fill(true), ...Array(conns * (SEND_AHEAD - 1)).fill(false)]);
    expect(s.view('google', T0)[0]).to.include({ open: conns, busy: conns * SEND_AHEAD });
    expect(s.wakeAt()).to.equal(Infinity);
    s.done(IP, 'google', false);
    const d = s.next(T0)!;
    expect(d.newConnection).to.equal(false); // the connections are all open
    s.done(IP, 'google', true);
    expect(s.next(T0)!.newConnection).to.equal(true); // one was closed: a new one
  });

  it('a site with a rate keeps one message per connection in flight: its spacing is its limit', () => {
    const s = new Scheduler(withRate('bulk', '6000/min', { connections: 2 }));
    s.setQueue('q', 'bulk', [IP], 100);
    let n = 0;
    for (let now = T0; now < T0 + 1000; now += 10) while (s.next(now)) n++; // no done(): connections fill up
    expect(n).to.equal(2);
    expect(s.view('bulk', T0 + 1000)[0]).to.include({ open: 2, busy: 2 });
  });

  it('a throttled lane keeps one message per connection in flight, not SEND_AHEAD', () => {
    const s = new Scheduler(loadShaping(BUILT_IN));
    const site = 'mx.throttled.example'; // the default site's limits: 10 connections
    s.setQueue('q', site, [IP], 100);
    expect(s.reply(IP, site, '421 4.7.0 Rate limit exceeded, slow down', T0)?.action).to.equal('throttle');
    let n = 0;
    while (s.next(T0)) n++;
    const half = BUILT_IN.default.connections / 2; // the throttle halves the connections too
    expect(n).to.equal(half);
    expect(s.view(site, T0)[0]).to.include({ open: half, busy: half });
  });
});

describe('shaping scheduler: sites', () => {
  it('two domains on one site share its limits', () => {
    const rules = loadShaping(BUILT_IN, { sites: { google: { rate: '60/min' } } });
    const m = siteMatcher(rules.sites);
    const gmail = m.siteOf(['gmail-smtp-in.l.google.com']);
    const corp = m.siteOf(['aspmx.l.google.com', 'alt1.aspmx.l.google.com']);
    expect(gmail).to.equal(corp);
    const s = new Scheduler(rules);
    s.setQueue('gmail.com', gmail, [IP], 1000);
    s.setQueue('corp.example', corp, [IP], 1000);
    const sent = simulate(s, T0, T0 + 60_000);
    expect(sent.length).to.equal(60); // 60/min for the site, not per domain
    expect(sent.filter((x) => x.queue === 'corp.example').length).to.equal(30);
    // connections too: without done(), the site has 5 (and 5 messages waiting for them) whatever the domain
    const t = new Scheduler(loadShaping(BUILT_IN));
    t.setQueue('gmail.com', gmail, [IP], 100);
    t.setQueue('corp.example', corp, [IP], 100);
    let n = 0;
    while (t.next(T0)) n++;
    expect(n).to.equal(BUILT_IN.sites.google.connections * SEND_AHEAD);
    expect(t.view(gmail, T0)[0].open).to.equal(BUILT_IN.sites.google.connections);
  });

  it('limits hold per (IP, site): another IP or another site has its own', () => {
    const s = new Scheduler(withRate('bulk', '60/min'));
    s.setQueue('a', 'bulk', [IP], 100);
    s.setQueue('b', 'bulk', [IP2], 100);
    s.setQueue('c', 'mx.other.example', [IP], 3);
    const sent = simulate(s, T0, T0 + 10_000);
    expect(sent.filter((x) => x.ip === IP && x.site === 'bulk').length).to.equal(10);
    expect(sent.filter((x) => x.ip === IP2).length).to.equal(10);
    expect(sent.filter((x) => x.queue === 'c').length).to.equal(3);
  });
});

describe('shaping scheduler: fairness', () => {
  it('a site with 5 queued is served within the first decisions beside one with 10,000', () => {
    const s = new Scheduler(loadShaping(BUILT_IN, { default: { connections: 100000 } }));
    s.setQueue('big', 'mx.big.example', [IP], 10_000);
    s.setQueue('small', 'mx.small.example', [IP], 5);
    const first = simulate(s, T0, T0 + 1, 12).map((x) => x.queue);
    expect(first.slice(0, 2)).to.include('small');
    expect(first.filter((q) => q === 'small').length).to.equal(5);
    expect(first.indexOf('small', 0)).to.be.lessThan(2);
    expect(first.lastIndexOf('small')).to.be.lessThan(10);
  });

  it('a site arriving later is served next, and a saturated or rate-limited site never blocks others', () => {
    const s = new Scheduler(withRate('slow', '1/h', { connections: 1 }));
    s.setQueue('slow', 'slow', [IP], 10_000);
    s.setQueue('big', 'mx.big.example', [IP], 10_000);
    for (let i = 0; i < 30; i++) {
      // big saturates its 10 connections (20 messages in flight); slow sends its one message
      const d = s.next(T0);
      if (d?.queue === 'slow') s.done(d.ip, d.site, false);
    }
    s.setQueue('late', 'mx.late.example', [IP], 2);
    expect(s.next(T0)?.queue).to.equal('late');
    expect(s.next(T0)?.queue).to.equal('late');
    expect(s.next(T0)).to.equal(null);
    expect(s.wakeAt()).to.equal(T0 + 3_600_000); // slow's next slot; big waits for done()
  });
});

describe('shaping scheduler: reactions', () => {
  it('a throttle reply halves the rate, which then comes back step by step', () => {
    const s = new Scheduler(withRate('bulk', '60/min'));
    s.setQueue('q', 'bulk', [IP], 100_000);
    const before = simulate(s, T0, T0 + 10_000);
    expect(before.length).to.equal(10);
    expect(s.reply(IP, 'bulk', '421 4.7.0 Rate limit exceeded, slow down', T0 + 10_000)?.action).to.equal('throttle');
    const during = simulate(s, T0 + 10_000, T0 + 610_000).map((x) => x.t);
    expect(during.length).to.be.within(300, 301); // one per 2 s for the 600 s step
    expect(s.view('bulk', T0 + 300_000)[0]).to.include({ state: 'throttled' });
    const after = simulate(s, T0 + 610_000, T0 + 670_000);
    expect(after.length).to.be.within(60, 61); // restored to 1/s
    expect(s.view('bulk', T0 + 670_000)[0]).to.include({ state: 'open', reason: null });
  });

  it('a suspend reply stops the site on that IP until T, then it resumes at T', () => {
    const s = new Scheduler(loadShaping(BUILT_IN));
    s.setQueue('gmail.com', 'google', [IP, IP2], 10);
    expect(s.reply(IP, 'google', '421-4.7.28 unusual rate of unsolicited mail', T0)?.action).to.equal('suspend');
    expect(s.next(T0 + 1000)).to.equal(null); // suspended: waits, does not move to IP2
    expect(s.wakeAt()).to.equal(T0 + 900_000);
    expect(s.view('google', T0 + 1000).find((v) => v.ip === IP)).to.include({
      state: 'suspended',
      until: T0 + 900_000,
    });
    expect(s.next(T0 + 899_999)).to.equal(null);
    expect(s.next(T0 + 900_000)?.ip).to.equal(IP);
    expect(s.ready('gmail.com')).to.equal(9); // deferred mail stayed queued
  });

  it("a blocklist reply moves the site's traffic to the pool's other IP until it expires", () => {
    const s = new Scheduler(loadShaping(BUILT_IN));
    s.setQueue('q', 'mx.corp.example', [IP, IP2], 10);
    expect(s.next(T0)?.ip).to.equal(IP);
    expect(s.reply(IP, 'mx.corp.example', '554 5.7.1 Client host blocked using zen.spamhaus.org', T0)?.action).to.equal(
      'blocklist',
    );
    expect(s.next(T0)?.ip).to.equal(IP2);
    expect(s.next(T0 + 7_199_999)?.ip).to.equal(IP2);
    expect(s.next(T0 + 7_200_000)?.ip).to.equal(IP);
  });

  it('operator suspend (every IP, also ones not seen yet; or one IP) and resume', () => {
    const s = new Scheduler(loadShaping(BUILT_IN));
    s.suspendSite('yahoo', [], null, 'maintenance', T0); // before any queue or lane exists
    s.setQueue('q', 'yahoo', [IP], 10);
    expect(s.next(T0 + DAY_MS)).to.equal(null);
    expect(s.wakeAt()).to.equal(Infinity);
    expect(s.view('yahoo', T0)[0]).to.include({ ip: IP, state: 'suspended', until: null, reason: 'maintenance' });
    s.resumeSite('yahoo', []);
    expect(s.next(T0 + DAY_MS)?.site).to.equal('yahoo');
    s.suspendSite('yahoo', [IP], 60, 'one IP', T0 + DAY_MS);
    s.setQueue('r', 'yahoo', [IP2], 1);
    expect(s.next(T0 + DAY_MS)?.ip).to.equal(IP2); // the other IP's queue is unaffected
    expect(s.next(T0 + DAY_MS)).to.equal(null);
    expect(s.wakeAt()).to.equal(T0 + DAY_MS + 60_000);
  });
});

describe('shaping scheduler: warm-up', () => {
  const rules = loadShaping(BUILT_IN, { warmup: { schedule: [3, 5] } });

  it('cap N: the N+1th is refused that day and allowed the next', () => {
    const s = new Scheduler(rules);
    s.setWarmup(IP, { startedAt: T0, startDay: 0 });
    s.setQueue('q', 'mx.corp.example', [IP], 100);
    for (let i = 0; i < 3; i++) {
      expect(s.next(T0 + i)?.ip).to.equal(IP);
      s.done(IP, 'mx.corp.example', false);
    }
    expect(s.next(T0 + 10)).to.equal(null);
    const midnight = Date.UTC(2030, 0, 2);
    expect(s.wakeAt()).to.equal(midnight);
    expect(s.next(midnight - 1)).to.equal(null);
    const sent = simulate(s, midnight, midnight + DAY_MS - 1);
    expect(sent.length).to.equal(5); // day 1 of the schedule
    expect(s.view('mx.corp.example', midnight + 1)[0].sentToday).to.equal(5);
    expect(simulate(s, midnight + DAY_MS, midnight + DAY_MS + 1000).length).to.equal(92); // warm after the last day
  });

  it("over the cap, traffic goes to the pool's warm IPs, never to another warming one; caps are per site", () => {
    const s = new Scheduler(rules);
    s.setWarmup(IP, { startedAt: T0, startDay: 0 });
    s.setWarmup('192.0.2.12', { startedAt: T0, startDay: 0 });
    s.setQueue('q', 'mx.corp.example', [IP, '192.0.2.12', IP2], 10);
    s.setQueue('r', 'mx.other.example', [IP], 10);
    const sent = simulate(s, T0, T0 + 1000);
    const corp = sent.filter((x) => x.queue === 'q').map((x) => x.ip);
    expect(corp).to.deep.equal([IP, IP, IP, IP2, IP2, IP2, IP2, IP2, IP2, IP2]);
    expect(sent.filter((x) => x.queue === 'r').length).to.equal(3);
  });
});
