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
  this.timeout(60000);
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
      MTA_OUTBOUND_TIMEOUT_SECONDS: '2',
      MTA_OUTBOUND_PER_DOMAIN_CONCURRENCY: '4',
      MTA_RETRY_MIN_SECONDS: '0.2',
      MTA_RETRY_MAX_SECONDS: '1',
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
    const until = Date.now() + 30000;
    let statuses: string[] = [];
    while (Date.now() < until) {
      statuses = await Promise.all(
        ids.map(
          async (id) =>
            ((await (await checked(`${svc.url}/v1/emails/${id}`, { headers })).json()) as { status: string }).status,
        ),
      );
      if (statuses.every((s) => s === 'delivered')) break;
      await sleep(100);
    }
    expect(statuses.filter((s) => s !== 'delivered')).to.deep.equal([]);
    for (let i = 0; i < N; i++) expect(mx.to(`u${i}@rcpt.test`).length, `u${i}`).to.be.at.least(1);
    expect(mx.messages.length - before, 'the restarted service delivered the rest').to.be.at.least(N - before);
    db.close();
  });
});
