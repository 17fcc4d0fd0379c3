// Memory back after a burst (src/outbound/trim.ts): a trim only once the loop has been idle for idleMs after
// enough work, none while new work keeps coming; the full GC runs without node's --expose-gc flag.
import { expect } from 'chai';
import { IdleTrim, fullGc } from '../../src/outbound/trim.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('idle memory trim', () => {
  it('trims once after idleMs of idleness following at least minWork results; not before, not twice', async () => {
    let n = 0;
    const t = new IdleTrim(() => n++, { idleMs: 50, minWork: 10 });
    t.busy(5);
    t.idle(); // too little work: nothing
    await sleep(80);
    expect(n).to.equal(0);
    t.busy(5);
    t.idle();
    await sleep(20);
    t.busy(1); // new work within idleMs: no trim yet
    await sleep(60);
    expect(n).to.equal(0);
    t.idle();
    await sleep(80);
    expect(n).to.equal(1);
    t.idle(); // no work since: nothing more
    await sleep(80);
    expect(n).to.equal(1);
    t.stop();
  });

  it('runs a full GC: garbage goes (heap used drops)', () => {
    let junk: object[] = [];
    for (let i = 0; i < 300_000; i++) junk.push({ i, s: `x${i}` });
    junk = [];
    const before = process.memoryUsage().heapUsed;
    expect(fullGc()).to.equal(true);
    expect(process.memoryUsage().heapUsed).to.be.lessThan(before - 10 * 1048576);
    expect(junk).to.have.length(0);
  });
});
