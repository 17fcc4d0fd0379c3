// SIGTERM on `mta serve` (a child process) while clients keep sending: the HTTP listener stops taking new work first
// (a request sent once the process logged that it is shutting down is refused or answered 503 shutting_down, never
// 202), every email answered 202 before is in the store after a restart, and the process exits 0.
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { tempDir } from '../helpers/service.js';
import { liveSender, loopbackEnv, serveChild } from '../helpers/cli.js';
import { assertDescribed, checkedFetch, parseBody, servedContract } from '../helpers/contract.js';
import { route } from './outbound-env.js';

describe('SIGTERM: new requests are refused first, accepted email is kept', function () {
  this.timeout(120_000);
  let child: ChildProcess | undefined;
  let dns: TestDns, mx: TestMx;
  after(async () => {
    child?.kill('SIGKILL');
    await mx?.stop();
    await dns?.stop();
  });

  it('answers no 202 to a request sent after the signal, loses none answered before, exits 0', async () => {
    // The MX takes a while over each message: deliveries are in flight when the signal comes, so the drain lasts.
    dns = await new TestDns().start();
    mx = await new TestMx({ script: { data: () => ({ delayMs: 1500 }) } }).start();
    route(dns, 'rcpt.test');
    const dataDir = tempDir('mta-stop-');
    const env = loopbackEnv(dataDir, dns.server, mx.port, { MTA_RATE_LIMIT: '0', MTA_LOG_LEVEL: 'info' });
    const key = await liveSender(env, dns, 'stop');
    let svc = await serveChild(env);
    child = svc.child;
    const contract = await servedContract(svc.url); // every answer checked against the document
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const before: string[] = []; // ids answered 202
    const after: { status: number | 'refused' }[] = []; // requests sent once the shutdown was logged
    let shuttingDown = false;
    let done = false;
    let n = 0;
    const sender = async () => {
      while (!done) {
        const late = shuttingDown;
        const i = n++;
        let r: Response;
        try {
          r = await fetch(`${svc.url}/v1/emails`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({ from: 'app@sender.test', to: `u${i}@rcpt.test`, subject: `s${i}`, text: 'x' }),
          });
        } catch {
          if (late) after.push({ status: 'refused' });
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        // Outside the try: an answer off the document (or a 503 other than shutting_down) fails the test.
        const text = await r.text();
        assertDescribed(contract, 'POST', `${svc.url}/v1/emails`, r.status, parseBody(text));
        const body = JSON.parse(text) as { id?: string; error?: { code: string } };
        if (late) after.push({ status: r.status });
        else if (r.status === 202) before.push(body.id!);
        if (r.status === 503) expect(body.error?.code).to.equal('shutting_down');
      }
    };
    const senders = Array.from({ length: 8 }, sender);
    while (before.length < 100) await new Promise((r) => setTimeout(r, 5));
    const exit = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child.stderr!.on('data', (c) => {
      if (/shutting down/.test(String(c))) shuttingDown = true;
    });
    child.kill('SIGTERM');
    const code = await exit;
    done = true;
    await Promise.all(senders);
    expect(code).to.equal(0);
    expect(after.length, 'requests were sent during the drain').to.be.greaterThan(0);
    expect(after.filter((a) => a.status === 202)).to.deep.equal([]);

    svc = await serveChild(env);
    child = svc.child;
    for (const id of before) {
      const r = await checkedFetch(contract)(`${svc.url}/v1/emails/${id}`, { headers: auth });
      expect(r.status, id).to.equal(200);
    }
  });
});
