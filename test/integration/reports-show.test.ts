// `mta reports show` prints a stored message (anyone's input) with its control characters escaped, so
// a report cannot drive the operator's terminal; line breaks and tabs stay as they are.
import { expect } from 'chai';
import { tempDir, openTestDb } from '../helpers/service.js';
import { mta } from '../helpers/cli.js';
import { printable } from '../../src/inbound/printable.js';

describe('mta reports show: control characters', function () {
  this.timeout(60_000);
  const dir = tempDir();

  it('escapes ESC, NUL, lone CR, DEL, C1 and bidi controls, keeps \\n and \\t, prints CRLF as a newline', async () => {
    const db = await openTestDb(dir);
    const raw = Buffer.from(
      'Subject: \x1b]0;owned\x07\x1b[2J hi\r\nX: a\tb\x00c\rd\x7f\u009b\u202e\r\n\r\nbody é\n',
      'utf8',
    );
    db.prepare(
      "INSERT INTO inbound_reports (id, kind, outcome, rcpt_to, parsed_json, raw_size, raw, created_at) VALUES ('rep_ctl', 'other', 'unmatched', 'fbl@b.test', '{}', ?, ?, ?)",
    ).run(raw.length, raw, Date.now());
    db.close();
    const r = await mta(['reports', 'show', 'rep_ctl'], { MTA_DATA_DIR: dir });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal(
      'Subject: \\x1b]0;owned\\x07\\x1b[2J hi\nX: a\tb\\x00c\\x0dd\\x7f\\x9b\\u{202e}\n\nbody é\n',
    );
    expect(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(r.stdout)).to.equal(false);
  });

  it('shows bytes that are not UTF-8 one character per byte, C1 bytes escaped', () => {
    expect(printable(Buffer.from([0x41, 0xe9, 0x9b, 0x0a]))).to.equal('A\u00e9\\x9b\n');
  });
});
