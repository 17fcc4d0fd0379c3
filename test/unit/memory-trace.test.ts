// MTA_MEMORY_TRACE (src/lib/memory-trace.ts): each thread that traces appends its heap and the process's resident set
// every MTA_MEMORY_TRACE_MS; the outbound worker traces itself, and its young generation stays within the 12 MiB
// given to it (two semi-spaces of 4 MiB: at most 8 MiB committed) under a stream of signing jobs, where V8's default
// lets it grow to 32 MiB (BENCHMARKS.md "Session 20: peak memory").
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import pino from 'pino';
import { traceMemory } from '../../src/lib/memory-trace.js';
import { SignerPool } from '../../src/outbound/signer.js';
import type { SignJob } from '../../src/outbound/message.js';

type Line = { thread: string; rss: number; heapUsed: number; heapTotal: number; spaces: Record<string, number> };
const read = (file: string): Line[] =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);

describe('memory trace (MTA_MEMORY_TRACE)', function () {
  this.timeout(60_000);
  let file: string;
  const saved = { trace: process.env.MTA_MEMORY_TRACE, ms: process.env.MTA_MEMORY_TRACE_MS };
  beforeEach(() => {
    file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mta-memtrace-')), 'trace.jsonl');
    process.env.MTA_MEMORY_TRACE = file;
    process.env.MTA_MEMORY_TRACE_MS = '20';
  });
  afterEach(() => {
    for (const [k, v] of [
      ['MTA_MEMORY_TRACE', saved.trace],
      ['MTA_MEMORY_TRACE_MS', saved.ms],
    ] as const)
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });

  it('is off without the variable; with it, a line per interval with the heap, the resident set and the extra counts', async () => {
    delete process.env.MTA_MEMORY_TRACE;
    expect(traceMemory('main')).to.equal(null);
    process.env.MTA_MEMORY_TRACE = file;
    const stop = traceMemory('main', () => ({ held: 7 }))!;
    await new Promise((r) => setTimeout(r, 120));
    stop();
    const lines = read(file);
    expect(lines.length).to.be.within(3, 10);
    for (const l of lines) {
      expect(l).to.include({ thread: 'main', held: 7 });
      expect(l.rss).to.be.greaterThan(l.heapUsed);
      expect(l.heapTotal).to.be.at.least(l.heapUsed);
      expect(l.spaces.new).to.be.greaterThan(0);
    }
    const n = lines.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(read(file).length).to.equal(n); // stopped
  });

  it('the outbound worker traces itself; its young generation stays within 8 MiB while it signs a stream of jobs', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const job = (i: number): SignJob => ({
      fields: {
        id: `em_trace${i}`,
        from_addr: 'App <app@sender.test>',
        to_json: JSON.stringify(['user@dest.test']),
        cc_json: null,
        reply_to: null,
        subject: `Receipt ${i}`,
        text: `Thanks for your order ${i}.\n`.repeat(400),
        headers_json: null,
        scheduled_at: null,
        created_at: Date.UTC(2026, 0, 2),
      },
      html: `<p>Thanks for your order <b>${i}</b>.</p>`.repeat(400),
      hostname: 'mta.test',
      keys: {
        rsa: {
          signingDomain: 'sender.test',
          selector: 's1',
          privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        },
        ed25519: null,
      },
    });
    const pool = new SignerPool(pino({ level: 'silent' }));
    pool.start();
    const t = Date.now();
    while (!pool.onWorker && Date.now() - t < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(pool.onWorker).to.equal(true);
    // 32 at a time, as the delivery loop prepares them (outbound/loop.ts PREPARE_AT_ONCE)
    for (let i = 0; i < 1500; i += 32) await Promise.all(Array.from({ length: 32 }, (_, k) => pool.sign(job(i + k))));
    await new Promise((r) => setTimeout(r, 60));
    await pool.stop();
    const worker = read(file).filter((l) => l.thread === 'worker');
    expect(worker.length).to.be.greaterThan(3);
    const young = Math.max(...worker.map((l) => l.spaces.new));
    expect(young).to.be.at.most(8);
  });
});
