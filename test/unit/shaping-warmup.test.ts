// Warm-up caps (UTC days from the start day; warm after the last schedule entry) and the spacing limiter alone.
import { expect } from 'chai';
import { capToday, DAY_MS, nextDayAt, warmupDay } from '../../src/core/shaping/warmup.js';
import { intervalOf, Spacing } from '../../src/core/shaping/bucket.js';

const T0 = Date.UTC(2030, 5, 1, 23, 59, 0);
const schedule = [50, 100, 200];

describe('shaping warm-up caps', () => {
  it('day 0 on the start day, the next schedule entry at each UTC midnight, warm after the last', () => {
    const w = { startedAt: T0, startDay: 0 };
    expect(capToday(schedule, w, T0)).to.equal(50);
    expect(capToday(schedule, w, Date.UTC(2030, 5, 2))).to.equal(100); // a minute later, past midnight
    expect(warmupDay(w, Date.UTC(2030, 5, 3, 12))).to.equal(2);
    expect(capToday(schedule, w, Date.UTC(2030, 5, 3, 12))).to.equal(200);
    expect(capToday(schedule, w, Date.UTC(2030, 5, 4))).to.equal(null);
    expect(nextDayAt(T0)).to.equal(Date.UTC(2030, 5, 2));
  });

  it('starts at --day N; an IP not warming has no cap', () => {
    expect(capToday(schedule, { startedAt: T0, startDay: 2 }, T0)).to.equal(200);
    expect(capToday(schedule, { startedAt: T0, startDay: 2 }, T0 + DAY_MS)).to.equal(null);
    expect(capToday(schedule, undefined, T0)).to.equal(null);
  });
});

describe('shaping spacing limiter', () => {
  it('lets one message per interval through, the first at once; no rate means no wait', () => {
    const b = new Spacing();
    const iv = intervalOf(100 / 60_000); // 100/min
    expect(iv).to.be.closeTo(600, 1e-9);
    expect(b.take(iv, 1000)).to.equal(true);
    expect(b.waitMs(iv, 1000)).to.be.closeTo(600, 1e-9);
    expect(b.take(iv, 1599)).to.equal(false);
    expect(b.take(iv, 1600 + 1e-9)).to.equal(true);
    expect(intervalOf(null)).to.equal(0);
    expect(new Spacing().take(0, 0) && new Spacing().waitMs(0, 0)).to.equal(0);
    expect(intervalOf(1 / 1000, 0.5)).to.equal(2000); // throttled to half
  });
});
