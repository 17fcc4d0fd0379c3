// A 202 is durable: POSTs run concurrently against `mta serve` (a child process), which is killed
// with SIGKILL mid-stream; after a restart every email that got a 202 is there, each exactly once.
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { tempDir } from '../helpers/service.js';
import { mta, quietEnv, serveChild } from '../helpers/cli.js';
import { checkedFetch, servedContract } from '../helpers/contract.js';

describe('POST /v1/emails: kill -9 loses no accepted email', function () {
  this.timeout(90_000);
  let child: ChildProcess | undefined;
  after(() => {
    child?.kill('SIGKILL');
  });

  it('every 202 survives the kill, and idempotent retries after the restart do not duplicate', async () => {
    const env = quietEnv(tempDir('mta-api-crash-'));
    expect((await mta(['team', 'create', 'crash'], env)).code).to.equal(0);
    const key = (await mta(['key', 'create', '--team', 'crash'], env)).stdout.trim();
    let svc = await serveChild(env);
    child = svc.child;
    const accepted = new Map<string, string>(); // idempotency key → email id
    let stop = false;
    const post = (url: string, i: number, send: typeof fetch = fetch) =>
      send(`${url}/v1/emails`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `n${i}` },
        body: JSON.stringify({ from: 'app@sender.test', to: `u${i}@rcpt.test`, subject: `n${i}`, text: 'x' }),
      });
    let next = 0;
    const worker = async () => {
      while (!stop) {
        const i = next++;
        try {
          const r = await post(svc.url, i);
          if (r.status === 202) accepted.set(`n${i}`, ((await r.json()) as { id: string }).id);
        } catch {
          return;
        } // the connection died with the process
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    while (accepted.size < 300) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    svc = await serveChild(env);
    child = svc.child;
    // After the restart, every answer is checked against the document the service serves.
    const checked = checkedFetch(await servedContract(svc.url));
    const auth = { authorization: `Bearer ${key}` };
    for (const [, id] of accepted) {
      const r = await checked(`${svc.url}/v1/emails/${id}`, { headers: auth });
      expect(r.status, id).to.equal(200);
    }
    // Retrying every request that was sent (answered or not) with its key never creates a second email.
    for (let i = 0; i < next; i++) {
      const r = await post(svc.url, i, checked);
      expect(r.status).to.equal(202);
      const id = ((await r.json()) as { id: string }).id;
      if (accepted.has(`n${i}`)) expect(id).to.equal(accepted.get(`n${i}`));
    }
    let total = 0;
    let cursor: string | null = null;
    do {
      const page = (await (
        await checked(`${svc.url}/v1/emails?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { headers: auth })
      ).json()) as { data: unknown[]; next_cursor: string | null };
      total += page.data.length;
      cursor = page.next_cursor;
    } while (cursor);
    expect(total).to.equal(next);
  });
});
