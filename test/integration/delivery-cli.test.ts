// Operator controls against a running `mta serve` (a real child process) with the real `mta` binary: a warming IP
// with a cap of 3 delivers 3 that day and keeps the rest queued; `mta sites`, `mta site suspend|resume`,
// `mta ip list`, `mta ip warmup` print what operations.md says; suspensions and warm-up counts survive a restart.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { tempDir } from '../helpers/service.js';
import { liveSender, mta, serveChild } from '../helpers/cli.js';
import { checkedFetch, servedContract } from '../helpers/contract.js';
import { route, sleep } from './outbound-env.js';

describe('delivery control: mta sites / site / ip against a running service', function () {
  this.timeout(60000);
  let dns: TestDns, mx: TestMx, child: ChildProcess | undefined;
  after(async () => {
    child?.kill('SIGKILL');
    await mx?.stop();
    await dns?.stop();
  });

  const SITE = 'mx.rcpt.test';
  const cli = async (env: Record<string, string>, ...args: string[]) => {
    const r = await mta(args, env);
    expect(r.code, r.stderr).to.equal(0);
    return JSON.parse(r.stdout);
  };
  const stop = async (c: ChildProcess) => {
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await gone;
  };

  it('warm-up cap, suspend/resume, ip list, persistence across a restart, metrics', async () => {
    dns = await new TestDns().start();
    mx = await new TestMx().start();
    route(dns, 'rcpt.test');
    const dataDir = tempDir('mta-delivery-cli-');
    const shaping = path.join(dataDir, 'shaping.json');
    fs.writeFileSync(shaping, JSON.stringify({ warmup: { schedule: [3, 5] } }));
    const env: Record<string, string> = {
      MTA_DATA_DIR: dataDir,
      MTA_HTTP_PORT: '0',
      MTA_SMTP_PORT: '0',
      MTA_SMTP_HOST: '127.0.0.1',
      MTA_SUBMISSION_PORT: '0',
      MTA_HOSTNAME: 'mta.test',
      MTA_DNS_SERVERS: dns.server,
      MTA_OUTBOUND_PORT: String(mx.port),
      MTA_OUTBOUND_TIMEOUT_SECONDS: '2',
      MTA_RETRY_MIN_SECONDS: '0.2',
      MTA_RETRY_MAX_SECONDS: '2',
      MTA_RATE_LIMIT: '0',
      MTA_LOG_LEVEL: 'info',
      MTA_SENDING_IPS: '127.0.0.2',
      MTA_SHAPING_FILE: shaping,
      MTA_DNS_CHECK_CRON: '0 0 1 1 *',
    };
    const key = await liveSender(env, dns, 'ops');

    let svc = await serveChild(env);
    child = svc.child;
    const w = await cli(env, 'ip', 'warmup', '127.0.0.2');
    expect(w).to.deep.include({ ip: '127.0.0.2', pool: 'default' });
    expect(w.warmup).to.include({ day: 0 });
    expect(w.warmup.caps_today.google).to.equal(3);
    await sleep(1200); // applied by the loop within a second

    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const checked = checkedFetch(await servedContract(svc.url)); // answers checked against the document
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await checked(`${svc.url}/v1/emails`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ from: 'app@sender.test', to: `u${i}@rcpt.test`, subject: 's', text: 'x' }),
      });
      ids.push(((await r.json()) as { id: string }).id);
    }
    const statuses = async () =>
      Promise.all(
        ids.map(
          async (id) =>
            ((await (await checked(`${svc.url}/v1/emails/${id}`, { headers })).json()) as { status: string }).status,
        ),
      );
    const until = Date.now() + 8000;
    while (mx.messages.length < 3 && Date.now() < until) await sleep(50);
    await sleep(1500);
    expect(mx.messages, 'a warming IP with a cap of 3 delivers 3 that day').to.have.length(3);
    expect((await statuses()).sort()).to.deep.equal(['delivered', 'delivered', 'delivered', 'queued', 'queued']);
    const ips = await cli(env, 'ip', 'list');
    expect(ips).to.have.length(1);
    expect(ips[0].warmup.sent_today).to.deep.equal({ [SITE]: 3 });

    const s = await cli(env, 'site', 'suspend', SITE, '--seconds', '600', '--reason', 'maintenance');
    expect(s).to.include({ site: SITE });
    expect(s.mx).to.deep.equal([SITE]);
    expect(s.limits).to.deep.equal({ connections: 10, messages_per_connection: 100, rate: null });
    expect(s.ips).to.have.length(1);
    expect(s.ips[0]).to.include({ ip: '127.0.0.2', state: 'suspended', reason: 'maintenance', rate: null });
    expect(Date.parse(s.ips[0].until) - Date.now()).to.be.within(590_000, 601_000);
    const all = await cli(env, 'sites');
    expect(all.map((x: any) => x.site)).to.include.members(['google', SITE]);
    expect(Object.keys(all.find((x: any) => x.site === SITE)).sort()).to.deep.equal([
      'in_flight',
      'ips',
      'limits',
      'mx',
      'queued',
      'sent_last_hour',
      'site',
    ]);
    expect(all.find((x: any) => x.site === SITE).sent_last_hour).to.equal(3);

    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    expect(metrics).to.match(/^mta_site_sent_total\{site="mx\.rcpt\.test"\} 3$/m);
    expect(metrics).to.match(/^mta_ip_site_state\{ip="127\.0\.0\.2",site="mx\.rcpt\.test"\} 2$/m);
    expect(metrics).to.match(/^mta_ip_warmup_day\{ip="127\.0\.0\.2"\} 0$/m);

    // A restart keeps the suspension and today's warm-up count.
    await stop(child);
    svc = await serveChild(env);
    child = svc.child;
    await sleep(1200);
    const after = (await cli(env, 'sites')).find((x: any) => x.site === SITE);
    expect(after.ips[0]).to.include({ state: 'suspended', reason: 'maintenance' });
    expect((await cli(env, 'ip', 'list'))[0].warmup.sent_today).to.deep.equal({ [SITE]: 3 });
    const r = await cli(env, 'site', 'resume', SITE);
    expect(r.ips[0]).to.include({ state: 'open', until: null, reason: null });
    await sleep(1500);
    expect(mx.messages, 'still capped for today after the restart').to.have.length(3);

    const stopped = await cli(env, 'ip', 'warmup', '127.0.0.2', '--stop');
    expect(stopped).to.deep.equal({ ip: '127.0.0.2', pool: 'default', warmup: null });
    const end = Date.now() + 10000;
    while (mx.messages.length < 5 && Date.now() < end) await sleep(100);
    expect(mx.messages).to.have.length(5);

    const bad = await mta(['site', 'suspend', 'no-such-site'], env);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.match(/no site named "no-such-site"/);
  });
});
