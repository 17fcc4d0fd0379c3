// Runs parseReport on every .eml of a fixture folder and checks it against the folder's expected.json
// (the corpus format: kind, then per recipient address, status, reason, hard, reply code, feedback type).
// `known_failure` entries are skipped; `address_checked: false` leaves the address out of the check.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parseReport } from '../../src/inbound/parse.js';

interface ExpectedRecipient {
  address: string | null;
  address_checked?: boolean;
  status: string | null;
  reason: string;
  hard: boolean | null;
  replycode: string | null;
  feedback_type: string | null;
}
interface Expected {
  file: string;
  kind: string;
  known_failure?: string;
  recipients: ExpectedRecipient[];
}

export function describeReportFixtures(title: string, folder: string): void {
  const dir = fileURLToPath(new URL(`../fixtures/${folder}/`, import.meta.url));
  const expected = JSON.parse(readFileSync(`${dir}expected.json`, 'utf8')) as Expected[];
  const shape = (r: Omit<ExpectedRecipient, 'address_checked'>, checked: boolean) => ({
    address: checked ? r.address : null,
    status: r.status,
    reason: r.reason,
    hard: r.hard,
    replycode: r.replycode ?? null,
    feedback_type: r.feedback_type ?? null,
  });

  describe(title, () => {
    it('has an expectation for every .eml file', () => {
      const files = readdirSync(dir)
        .filter((f) => f.endsWith('.eml'))
        .sort();
      expect(files).to.deep.equal(expected.map((e) => e.file).sort());
    });

    for (const e of expected) {
      const run = e.known_failure ? it.skip : it;
      run(`reads ${e.file}${e.known_failure ? ` (known failure: ${e.known_failure})` : ''}`, async () => {
        const report = await parseReport(readFileSync(dir + e.file));
        expect(report.kind).to.equal(e.kind);
        const checked = (i: number) => e.recipients[i]?.address_checked !== false;
        expect(
          report.recipients.map((r, i) =>
            shape({ ...r, replycode: r.replycode ?? null, feedback_type: r.feedback_type ?? null }, checked(i)),
          ),
        ).to.deep.equal(e.recipients.map((r, i) => shape(r, checked(i))));
        expect(report.original).to.have.keys(['message_id', 'email_id', 'return_path', 'from']);
      });
    }
  });
}
