// Runs parseReport on synthetic notices (test/fixtures/synthetic) written from the markers, formats and
// phrase tables of Sisimai's Lhost modules, for MTA families with no real sample in the dev sets.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';

interface Expected {
  file: string; kind: string;
  recipients: { address: string | null; status: string | null; reason: string; hard: boolean | null;
    replycode: string | null; feedback_type: string | null }[];
}

const dir = fileURLToPath(new URL('../fixtures/synthetic/', import.meta.url));
const expected = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as Expected[];

describe('parseReport on synthetic notices from Sisimai module formats', () => {
  it('has an expectation for every .eml file', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.eml')).sort();
    expect(files).to.deep.equal(expected.map((e) => e.file).sort());
  });

  for (const e of expected) {
    it(`reads ${e.file}`, async () => {
      const report = await parseReport(readFileSync(dir + e.file));
      expect(report.kind).to.equal(e.kind);
      const got = report.recipients.map((r) => ({
        address: r.address, status: r.status, reason: r.reason, hard: r.hard,
        replycode: r.replycode ?? null, feedback_type: r.feedback_type ?? null,
      }));
      expect(got).to.deep.equal(e.recipients);
    });
  }
});
