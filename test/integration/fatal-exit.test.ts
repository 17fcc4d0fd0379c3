// A process of `mta serve` that dies says why in its JSON log: an uncaught exception or an unhandled promise
// rejection is logged at fatal (with its message and stack) before the process exits 1 (src/main.ts
// exitOnUncaught). Without it Node prints a bare stack on stderr, which a log collector reading JSON lines drops: a
// node of store-outage.test.ts once exited 1 under load with nothing in its log.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';

/** Runs a process that installs the handler, keeps an interval (it would stay up), then fails as `how` says. */
function dieBy(how: 'throw' | 'reject'): Promise<{ code: number | null; stderr: string }> {
  const fail =
    how === 'throw'
      ? "setTimeout(() => { throw new Error('boom in a timer'); }, 20);"
      : "setTimeout(() => void Promise.reject(new Error('boom in a promise')), 20);";
  const script = [
    "import { exitOnUncaught } from './src/main.ts';",
    "import { createLogger } from './src/log.ts';",
    "exitOnUncaught(createLogger('info'));",
    'setInterval(() => {}, 1000);',
    fail,
  ].join('\n');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: path.resolve('.'), timeout: 30_000 },
      (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
    );
  });
}

describe('mta serve: a fatal error is logged before the process exits', function () {
  this.timeout(60_000);

  for (const [how, msg, text] of [
    ['throw', 'uncaught exception: the process exits', 'boom in a timer'],
    ['reject', 'unhandled promise rejection: the process exits', 'boom in a promise'],
  ] as const) {
    it(`${how === 'throw' ? 'an uncaught exception' : 'an unhandled rejection'}: one fatal JSON line, exit 1`, async () => {
      const r = await dieBy(how);
      expect(r.code, r.stderr).to.equal(1);
      const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
      const fatal = lines.map((l) => JSON.parse(l)).filter((o) => o.level === 60);
      expect(fatal, r.stderr).to.have.length(1);
      expect(fatal[0].msg).to.equal(msg);
      expect(fatal[0].err.message).to.equal(text);
      expect(fatal[0].err.stack).to.include(text);
    });
  }
});
