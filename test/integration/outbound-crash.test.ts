import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import pino from 'pino';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { tempDir, openTestDb } from '../helpers/service.js';
import { loopbackEnv, serveChild } from '../helpers/cli.js';
import { checkedFetch, servedContract } from '../helpers/contract.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { loadConfig } from '../../src/config/load.js';
import { createTeamPlan, createKeyPlan } from '../../src/services/keys.js';
import { runSync } from '../../src/store/op.js';
import { route, sleep } from './outbound-env.js';

describe('outbound delivery: kill -9 in the middle of a batch loses nothing', function () {
  // Two service starts and the deliveries: ~10 s alone, up to ~60 s at load 15 (a start alone took 21 s there).
  this.timeout(180_000);
  const N = 80;
  let dns: TestDns, mx: TestMx, child: ChildProcess | undefined;
  after(async () => {
    child?.kill('SIGKILL');
    await mx?.stop();
    await dns?.stop();
  });

  it('every queued recipient is delivered (at least once) after a restart', async () => {
    dns = await new TestDns().start();
    mx = await new TestMx({ script: { data: () => ({ delayMs: 40 }) } }).start();
    route(dns, 'rcpt.test');
    const dataDir = tempDir('mta-crash-');
    const env = loopbackEnv(dataDir, dns.server, mx.port, {
      // A whole transaction gets 4 s (outbound/index.ts timings: 0.8 × the lease, which MTA_RETRY_MAX_SECONDS caps).
      // It was 0.8 s (MTA_RETRY_MAX_SECONDS=1): at load ~15 no connection set-up (TCP, greeting, EHLO, STARTTLS) of
      // the twenty started at once finished within it, every round for 30 s; all recipients stayed delivery_delayed
      // with "connection set-up timed out" (docs/testing.md, session 22).
      MTA_OUTBOUND_TIMEOUT_SECONDS: '5',
      MTA_RETRY_MIN_SECONDS: '0.2',
      MTA_RETRY_MAX_SECONDS: '5',
      MTA_RATE_LIMIT: '0',
      MTA_LOG_LEVEL: 'info',
      MTA_ALLOW_PRIVATE_WEBHOOKS: '1',
    });
    const db = await openTestDb(dataDir);
    const ctx = { db, config: loadConfig({ env }), now: Date.now, log: pino({ level: 'silent' }) };
    const team = runSync(createTeamPlan(ctx, 'crash'));
    const key = runSync(createKeyPlan(ctx, team.id, { mode: 'live', scopes: ['emails:send', 'emails:read'] })).key;
    const dom = insertVerifiedDomain(db, team.id, 'sender.test');
    dns.set(`${dom.selector}._domainkey.sender.test`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });

    let svc = await serveChild(env);
    child = svc.child;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const checked = checkedFetch(await servedContract(svc.url)); // answers checked against the document
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const r = await checked(`${svc.url}/v1/emails`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ from: 'app@sender.test', to: `u${i}@rcpt.test`, subject: `n${i}`, text: 'x' }),
        });
        expect(r.status).to.equal(202);
        ids.push(((await r.json()) as { id: string }).id);
      }),
    );
    while (mx.messages.length < 10) await sleep(5);
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    const before = mx.messages.length;
    expect(before, 'killed in the middle of the batch').to.be.lessThan(N);

    svc = await serveChild(env);
    child = svc.child;
    // A deadline, not the measure: the killed process's leases end within 5 s, retries come within 5 s.
    const until = Date.now() + 90_000;
    // Waits on the store (80 API reads every 100 ms loaded the service it waited for), then reads each email's status.
    const left = () =>
      (db.prepare("SELECT count(*) AS n FROM deliveries WHERE status != 'delivered'").get() as { n: number }).n;
    while (Date.now() < until && left() > 0) await sleep(100);
    const statuses = await Promise.all(
      ids.map(
        async (id) =>
          ((await (await checked(`${svc.url}/v1/emails/${id}`, { headers })).json()) as { status: string }).status,
      ),
    );
    const stuck = db.prepare("SELECT attempts, last_reply FROM deliveries WHERE status != 'delivered'").all() as {
      attempts: number;
      last_reply: string | null;
    }[];
    const why = [...new Set(stuck.map((r) => `${r.last_reply} (${r.attempts} attempts)`))].slice(0, 5).join('; ');
    expect(
      statuses.filter((s) => s !== 'delivered'),
      `not delivered: ${why}`,
    ).to.deep.equal([]);
    for (let i = 0; i < N; i++) expect(mx.to(`u${i}@rcpt.test`).length, `u${i}`).to.be.at.least(1);
    expect(mx.messages.length - before, 'the restarted service delivered the rest').to.be.at.least(N - before);
    db.close();
  });
});
