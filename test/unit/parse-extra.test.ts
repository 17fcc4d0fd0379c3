// Runs parseReport on the wider development set (test/fixtures/sisimai-extra, more samples from
// Sisimai's set-of-emails, BSD-2-Clause) and checks it against that folder's expected.json.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';

interface ExpectedRecipient {
  address: string | null; address_checked?: boolean; status: string | null; reason: string;
  hard: boolean | null; replycode: string | null; feedback_type: string | null;
}
interface Expected { file: string; kind: string; known_failure?: string; recipients: ExpectedRecipient[] }

const dir = fileURLToPath(new URL('../fixtures/sisimai-extra/', import.meta.url));
const expected = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as Expected[];

describe('parseReport on the extra Sisimai samples', () => {
  it('has an expectation for every .eml file', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.eml')).sort();
    expect(files).to.deep.equal(expected.map((e) => e.file).sort());
  });

  for (const e of expected) {
    const run = e.known_failure ? it.skip : it;
    run(`reads ${e.file}${e.known_failure ? ` (known failure: ${e.known_failure})` : ''}`, async () => {
      const report = await parseReport(readFileSync(dir + e.file));
      expect(report.kind).to.equal(e.kind);
      const got = report.recipients.map((r, i) => ({
        address: e.recipients[i]?.address_checked === false ? null : r.address,
        status: r.status, reason: r.reason, hard: r.hard,
        replycode: r.replycode ?? null, feedback_type: r.feedback_type ?? null,
      }));
      expect(got).to.deep.equal(e.recipients.map((r) => ({
        address: r.address_checked === false ? null : r.address, status: r.status, reason: r.reason, hard: r.hard,
        replycode: r.replycode, feedback_type: r.feedback_type,
      })));
    });
  }
});
