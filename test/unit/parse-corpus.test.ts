// Runs parseReport on every message of the public bounce corpus (test/fixtures/corpus, from
// Sisimai's set-of-emails, BSD-2-Clause) and checks it against expected.json.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';

interface Expected {
  file: string; kind: string;
  recipients: { address: string | null; status: string | null; reason: string; hard: boolean | null;
    replycode: string | null; feedback_type: string | null }[];
}

const dir = fileURLToPath(new URL('../fixtures/corpus/', import.meta.url));
const expected = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as Expected[];

describe('parseReport on the bounce corpus', () => {
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
      expect(got).to.deep.equal(e.recipients.map((r) => ({
        address: r.address, status: r.status, reason: r.reason, hard: r.hard,
        replycode: r.replycode, feedback_type: r.feedback_type,
      })));
      expect(report.original).to.have.keys(['message_id', 'email_id', 'return_path', 'from']);
    });
  }
});
