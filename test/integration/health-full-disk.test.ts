// A full disk under a SQLite store (a real one: a 4 MiB tmpfs mounted for the test, which needs root; skipped
// otherwise): once writes fail (503 store_unavailable with Retry-After), /healthz answers 503 with the reason, so a load balancer sends the traffic
// elsewhere; the process keeps running, and once there is room again /healthz is 200 and emails are accepted.
import { expect } from 'chai';
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/temp.js';
import { testEngine } from '../helpers/service.js';
import { mta, quietEnv, serveChild } from '../helpers/cli.js';
import { checkedFetch, servedContract } from '../helpers/contract.js';

describe('/healthz on a full disk', function () {
  this.timeout(120_000);
  let child: ChildProcess | undefined;
  let mount: string | undefined;
  after(() => {
    child?.kill('SIGKILL');
    if (mount) execFileSync('umount', ['-l', mount]);
  });

  it('turns 503 while the store cannot write, and 200 again once it can', async function () {
    if (testEngine() !== 'sqlite') this.skip();
    const dir = tempDir('mta-full-disk-');
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir], { stdio: 'ignore' });
      mount = dir;
    } catch {
      this.skip(); // not root: no tmpfs of our own
    }
    const env = quietEnv(path.join(dir, 'data'));
    expect((await mta(['team', 'create', 'full'], env)).code).to.equal(0);
    const key = (await mta(['key', 'create', '--team', 'full'], env)).stdout.trim();
    const svc = await serveChild(env);
    child = svc.child;
    const checked = checkedFetch(await servedContract(svc.url)); // answers (the 503 too) checked against the document
    const health = async () => {
      const r = await fetch(`${svc.url}/healthz`);
      return { status: r.status, body: (await r.json()) as { status: string; reason?: string } };
    };
    expect((await health()).status).to.equal(200);

    // Fill the disk: a filler file takes what is left, then emails with 64 KiB bodies until one is refused.
    const filler = path.join(dir, 'filler');
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { stdio: 'ignore' });
    } catch {
      /* ENOSPC: the disk is full */
    }
    const send = (i: number) =>
      checked(`${svc.url}/v1/emails`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ from: 'a@sender.test', to: `u${i}@rcpt.test`, subject: 's', text: 'x'.repeat(65536) }),
      });
    let refused: Response | undefined;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await send(i);
      if (r.status !== 202) refused = r;
    }
    expect(refused?.status, 'a write failed on the full disk').to.equal(503);
    expect(((await refused!.json()) as { error: { code: string } }).error.code).to.equal('store_unavailable');
    expect(Number(refused!.headers.get('retry-after'))).to.be.greaterThan(0);
    const sick = await health();
    expect(sick.status).to.equal(503);
    expect(sick.body.status).to.equal('unhealthy');
    expect(sick.body.reason).to.match(/SQLITE_FULL|full/);

    fs.rmSync(filler);
    await new Promise((r) => setTimeout(r, 1100)); // the next health check tries a write again
    expect((await health()).status).to.equal(200);
    expect((await send(1000)).status).to.equal(202);
    expect(child.exitCode).to.equal(null);
  });
});
