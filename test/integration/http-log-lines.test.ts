// What `mta serve` writes to stderr is its JSON log, one object a line, even when a client aborts an upload
// half-way: Koa's default error printer (a bare stack trace, "Error: Parse Error") is replaced by the logger.
import http from 'node:http';
import type { ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { mta, quietEnv, serveChild } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

/** Sends headers announcing `declared` bytes, part of the body, then drops the connection. */
function abortedUpload(url: string, key: string, declared: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.request(`${url}/v1/emails`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': declared, authorization: `Bearer ${key}` },
    });
    req.on('error', () => resolve());
    req.write('{"from":"a@b.test","subject":"');
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 100);
  });
}

describe('mta serve: stderr holds JSON log lines only', function () {
  this.timeout(60_000);
  let child: ChildProcess | undefined;
  after(() => child?.kill('SIGKILL'));

  it('logs a client that aborts its upload as a JSON line, never a bare stack trace', async () => {
    const env = quietEnv(tempDir('mta-log-lines-'));
    expect((await mta(['team', 'create', 'logs'], env)).code).to.equal(0);
    const key = (await mta(['key', 'create', '--team', 'logs'], env)).stdout.trim();
    const s = await serveChild({ ...env, MTA_LOG_LEVEL: 'debug' });
    child = s.child;
    for (let i = 0; i < 3; i++) await abortedUpload(s.url, key, 100_000);
    // The service still answers, and has had time to write what it had to say of the aborted requests.
    expect((await fetch(`${s.url}/healthz`)).status).to.equal(200);
    await new Promise((r) => setTimeout(r, 300));
    const lines = s
      .log()
      .split('\n')
      .filter((l) => l.trim() !== '');
    const notJson = lines.filter((l) => {
      try {
        return typeof JSON.parse(l) !== 'object';
      } catch {
        return true;
      }
    });
    expect(notJson, 'stderr lines that are not JSON log lines').to.deep.equal([]);
    expect(
      lines.some((l) => /client closed|aborted/i.test(l)),
      'the aborts are logged',
    ).to.equal(true);
  });
});
