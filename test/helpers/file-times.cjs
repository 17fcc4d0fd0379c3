// A mocha reporter: the spec reporter's output, plus each test file's wall time (its hooks included), slowest first,
// written to $FILE_TIMES_OUT (default: file-times.txt in the temp folder) at the end of a serial run, e.g.
//   FILE_TIMES_OUT=/tmp/t.txt npx mocha --reporter test/helpers/file-times.cjs 'test/**/*.test.ts'
// For finding the files worth starting first in a parallel group (scripts/test-all.mjs). The times are right in serial
// runs only: in `--parallel` mode the reporter sees each file's events replayed at its end.
// With $MTA_TEST_FAILED set (scripts/test-all.mjs sets it, in parallel groups too), the file of every failing test or
// hook is appended to that file, one path per line: the runner runs those files again, alone, after the other groups.
/* global require, module, process */
/* eslint-disable @typescript-eslint/no-require-imports */
const Mocha = require('mocha');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { EVENT_SUITE_BEGIN, EVENT_RUN_END, EVENT_TEST_FAIL } = Mocha.Runner.constants;

class FileTimes extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const times = new Map();
    const t0 = Date.now();
    let current;
    let start = 0;
    const close = () => {
      if (current) times.set(current, (times.get(current) ?? 0) + Date.now() - start);
    };
    runner.on(EVENT_TEST_FAIL, (test) => {
      const file = test.file ?? test.parent?.file;
      if (process.env.MTA_TEST_FAILED) fs.appendFileSync(process.env.MTA_TEST_FAILED, `${file ?? '(unknown file)'}\n`);
    });
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (!suite.file || suite.file === current) return;
      close();
      current = suite.file;
      start = Date.now();
    });
    runner.once(EVENT_RUN_END, () => {
      close();
      const rows = [...times].sort((a, b) => b[1] - a[1]);
      const sum = rows.reduce((a, [, ms]) => a + ms, 0);
      const line = (ms, what) => `${(ms / 1000).toFixed(1).padStart(7)}  ${what}\n`;
      const text =
        rows.map(([file, ms]) => line(ms, path.relative(process.cwd(), file))).join('') +
        line(sum, 'sum of the files') +
        line(Date.now() - t0, 'whole run');
      fs.writeFileSync(process.env.FILE_TIMES_OUT || path.join(os.tmpdir(), 'file-times.txt'), text);
    });
  }
}

module.exports = FileTimes;
