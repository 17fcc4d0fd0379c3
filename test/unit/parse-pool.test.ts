// The worker-thread pool that reads inbound reports: it reads them off the main thread, abandons one over
// its time budget (the worker is replaced, the report reads as `error: 'timeout'`), and keeps serving.
import { expect } from 'chai';
import { createParsePool, type ParsePool } from '../../src/inbound/parse-pool.js';
import { parseReport } from '../../src/inbound/parse.js';
import { pathologicalInputs, dsn } from '../integration/redos-inputs.js';

describe('report parser pool (worker threads, time budget)', function () {
  this.timeout(30_000);
  let pool: ParsePool;
  const abandoned: string[] = [];
  before(() => {
    pool = createParsePool({ size: 1, onAbandon: (why) => abandoned.push(why) });
  });
  after(() => pool.close());

  const ordinary = Buffer.from(dsn('fbl@b.test', { returned: 'Return-Path: <x@bounces.example>\r\nFrom: a@b.test' }));

  it('reads a report exactly as parseReport does in-process', async () => {
    expect(await pool.parse(ordinary)).to.deep.equal(await parseReport(ordinary));
  });

  it('reads the same from a worker that runs the sources (tsx in the thread: the service run from src/)', async () => {
    // The other tests' workers start from dist/parse-worker.mjs while the bundle is fresh (test/helpers/prebuilt.ts).
    const prebuilt = process.env.MTA_PREBUILT_WORKER;
    process.env.MTA_PREBUILT_WORKER = '0';
    const fromSource = createParsePool({ size: 1 });
    try {
      expect(await fromSource.parse(ordinary, 60_000)).to.deep.equal(await parseReport(ordinary));
    } finally {
      if (prebuilt === undefined) delete process.env.MTA_PREBUILT_WORKER;
      else process.env.MTA_PREBUILT_WORKER = prebuilt;
      await fromSource.close();
    }
  });

  it('abandons a report over its budget, then reads the next one with a fresh worker', async () => {
    const slow = Buffer.from(pathologicalInputs('fbl@b.test')['5,000 recipient lines'] as string);
    // An order, not a wall-clock bound (1 s, which the parallel test phase's load can stretch): the answer over budget
    // comes before a second pool's worker, given the same report at the same moment and all the time it needs, has
    // read it (~300 ms of CPU time here), i.e. the caller does not wait for the reading it gave up on.
    const reader = createParsePool({ size: 1 });
    try {
      await reader.parse(ordinary); // its worker up before the race (the budget counts from the dispatch only)
      const order: string[] = [];
      const [r, read] = await Promise.all([
        pool.parse(slow, 10).finally(() => order.push('over budget')),
        reader.parse(slow, 120_000).finally(() => order.push('read')),
      ]);
      expect(order).to.deep.equal(['over budget', 'read']);
      expect(read.error).to.equal(undefined);
      expect(r).to.deep.include({ kind: 'other', recipients: [], error: 'timeout' });
    } finally {
      await reader.close();
    }
    expect(abandoned).to.deep.equal(['timeout']);
    const next = await pool.parse(ordinary);
    expect(next.error).to.equal(undefined);
    expect(next.recipients[0]).to.include({ address: 'someone@dest.test', status: '5.1.1' });
  });

  it('queues reports beyond its workers and answers each one', async () => {
    const all = await Promise.all(Array.from({ length: 6 }, () => pool.parse(ordinary)));
    expect(all.map((r) => r.recipients[0]?.address)).to.deep.equal(Array(6).fill('someone@dest.test'));
  });

  it('starts no worker before the first report and ends an idle one; the next report starts it again', async () => {
    const p = createParsePool({ size: 2, idleMs: 300 });
    try {
      expect(p.workers).to.equal(0);
      expect((await p.parse(ordinary)).recipients[0]?.address).to.equal('someone@dest.test');
      expect(p.workers).to.equal(1); // one report at a time: one worker is enough
      const t = Date.now();
      while (p.workers > 0 && Date.now() - t < 5000) await new Promise((r) => setTimeout(r, 50));
      expect(p.workers).to.equal(0);
      expect((await p.parse(ordinary)).recipients[0]?.address).to.equal('someone@dest.test');
    } finally {
      await p.close();
    }
  });

  it('refuses work once closed', async () => {
    const p = createParsePool({ size: 1 });
    await p.close();
    let err: Error | null = null;
    await p.parse(ordinary).catch((e: Error) => {
      err = e;
    });
    expect(err).to.be.instanceOf(Error);
  });
});
