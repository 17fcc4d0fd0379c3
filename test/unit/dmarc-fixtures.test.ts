// DMARC aggregate report fixtures (test/fixtures/dmarc/, written by make.ts from the schemas and the providers'
// documented formats): each message's reading equals the JSON beside it; the hostile ones, read in the real parse
// pool (worker threads, time budget), are unreadable and the pool still reads the next report.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { readDmarcMessage } from '../../src/inbound/dmarc.js';
import { createParsePool } from '../../src/inbound/parse-pool.js';
import { cpuMsOf } from '../helpers/growth.js';

const DIR = path.resolve('test/fixtures/dmarc');
const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.eml'));
const expected = (f: string) => JSON.parse(fs.readFileSync(path.join(DIR, f.replace(/\.eml$/, '.json')), 'utf8'));
const raw = (f: string) => fs.readFileSync(path.join(DIR, f));

describe('DMARC aggregate report fixtures', function () {
  this.timeout(30_000);

  it('has at least 15 readable reports and the hostile kinds the issue names', () => {
    const readable = files.filter((f) => expected(f).ok);
    expect(readable.length).to.be.at.least(14);
    expect(files.length).to.be.at.least(15);
    for (const f of [
      'zip-bomb',
      'gzip-bomb',
      'billion-laughs',
      'truncated-gzip',
      'utf16',
      'latin1-declared',
      'nested-zip',
    ])
      expect(files, f).to.include(`hostile-${f}.eml`);
  });

  for (const f of files)
    it(`reads ${f} as ${f.replace(/\.eml$/, '.json')}`, () => {
      expect(readDmarcMessage(raw(f))).to.deep.equal(expected(f));
    });

  it('reads the providers and both schemas as they write them', () => {
    const r = (f: string) => readDmarcMessage(raw(f));
    const ms = r('microsoft-gz-attachment.eml');
    expect(ms).to.deep.include({ ok: true, format: 'gzip', attachment: true });
    if (!ms.ok) throw new Error('unreadable');
    expect(ms.report.records.map((x) => [x.source_ip, x.count, x.dmarc_pass])).to.deep.equal([
      ['2001:db8::10', 7, true],
      ['198.51.100.7', 1, true],
    ]);
    const bis = r('rfc9990-prefixed-gz-body.eml');
    if (!bis.ok) throw new Error('unreadable');
    expect(bis.report.schema).to.equal('rfc9990');
    expect(bis.report.policy).to.include({ np: 'reject', testing: 'y', discovery_method: 'treewalk' });
    expect(bis.report.generator).to.equal('Example DMARC reporter 2.1');
    const google = r('google-zip-attachment.eml');
    if (!google.ok) throw new Error('unreadable');
    expect(google).to.include({ format: 'zip' });
    expect(google.report.records[1]).to.include({ source_ip: '203.0.113.5', dmarc_pass: false, disposition: 'none' });
  });

  it('a report cut by the listener reads as truncated', () => {
    const whole = raw('google-gz-attachment.eml');
    expect(readDmarcMessage(whole.subarray(0, 900), true)).to.include({ ok: false, error: 'truncated' });
  });

  it('hostile reports are unreadable in the worker pool, within the budget, and the pool reads the next one', async () => {
    const pool = createParsePool({ timeoutMs: 5000 });
    try {
      for (const f of files.filter((x) => x.startsWith('hostile-'))) {
        // CPU time of the process (the worker's thread included), not wall time, which the parallel test phase's
        // load stretches: a reading over the budget would be the pool's `timeout`, not the fixture's reading.
        const { ms, value: reading } = await cpuMsOf(() => pool.parseDmarc(raw(f), false));
        expect(reading, f).to.deep.equal(expected(f));
        expect(ms, f).to.be.below(5000);
      }
      expect(await pool.parseDmarc(raw('yahoo-gz-attachment.eml'), false)).to.deep.equal(
        expected('yahoo-gz-attachment.eml'),
      );
    } finally {
      await pool.close();
    }
  });

  it('a 1 ms budget ends the read (timeout, or too_large if it was that quick) without throwing', async () => {
    const pool = createParsePool({ timeoutMs: 1 });
    try {
      const big = raw('hostile-gzip-bomb.eml');
      const r = await pool.parseDmarc(big, false);
      expect(r.ok ? 'read' : r.error).to.be.oneOf(['timeout', 'too_large']);
    } finally {
      await pool.close();
    }
  });
});
