// The node survives its database (decisions.md "When the store fails"; issue 38 item 4): two `mta serve` processes on
// a PostgreSQL cluster of their own, emails posted under light load, the cluster shut down (`pg_ctl stop -m fast`)
// while deliveries are in flight. Both processes stay up; meanwhile the API answers 503 store_unavailable with
// Retry-After, /healthz 503, SMTP submission and inbound 451 4.3.0. Once the cluster is back the API takes emails
// again within seconds and every email accepted before the stop reaches the MX, none waiting for its lease's end.
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import nodemailer from 'nodemailer';
import pino from 'pino';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { tempDir, testEngine } from '../helpers/service.js';
import { loopbackEnv, serveChild } from '../helpers/cli.js';
import { assertDescribed, parseBody, servedContract, type Contract } from '../helpers/contract.js';
import { createDatabase, pgBinDir, startPg, type PgCluster } from '../helpers/pg.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { openDb, type DB } from '../../src/store/db.js';
import { loadConfig } from '../../src/config/load.js';
import { createTeam, createKey } from '../../src/services/keys.js';
import { route, sleep } from './outbound-env.js';

const N = 40;
/** The claims' lease: far longer than the test waits after the database returns. */
const LEASE_S = 120;

const rawPost = (url: string, key: string, i: number) =>
  fetch(`${url}/v1/emails`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ from: 'app@sender.test', to: `u${i}@rcpt.test`, subject: `n${i}`, text: 'x' }),
  });
/** The document the nodes serve: every answer (the 503 of the outage too) is checked against it. */
let contract: Contract | undefined;
const described = async (url: string, r: Response) => {
  assertDescribed(contract!, 'POST', `${url}/v1/emails`, r.status, parseBody(await r.clone().text()));
  return r;
};
const postEmail = async (url: string, key: string, i: number) => described(url, await rawPost(url, key, i));

const portOf = (log: string, name: string) => Number(new RegExp(`${name}=[0-9.]+:(\\d+)`).exec(log)![1]);

/** The SMTP reply to one message sent to `port` (submission with the key, or inbound without). */
async function smtpReply(port: number, key?: string): Promise<string> {
  const t = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    ignoreTLS: true,
    ...(key ? { auth: { user: 'apikey', pass: key } } : {}),
  });
  const to = key ? 'b@rcpt.test' : 'postmaster@mta.test';
  const r = await t.sendMail({ from: 'a@sender.test', to, subject: 's', text: 'x' }).catch((x: unknown) => x);
  t.close();
  return String((r as { response?: string }).response);
}

describe('the node survives its database (PostgreSQL stopped and started under load)', function () {
  this.timeout(240_000);
  let dns: TestDns, mx: TestMx, pgc: PgCluster | undefined;
  const children: ChildProcess[] = [];
  before(function () {
    // SQLite has no server to lose; its "cannot write" case is health-full-disk.test.ts.
    if (testEngine() !== 'pg' || !pgBinDir()) this.skip();
  });
  after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await mx?.stop();
    await dns?.stop();
    await pgc?.stop().catch(() => {}); // stopped already if the test failed during the outage
  });

  it('keeps both nodes up, answers 503 / 451 meanwhile, and delivers every accepted email once it is back', async () => {
    pgc = await startPg();
    const url = await createDatabase(pgc.url);
    dns = await new TestDns().start();
    mx = await new TestMx({ script: { data: () => ({ delayMs: 300 }) } }).start();
    route(dns, 'rcpt.test');
    const dirA = tempDir('mta-outage-a-');
    const env = (dataDir: string): Record<string, string> =>
      loopbackEnv(dataDir, dns.server, mx.port, {
        MTA_DATABASE_URL: url,
        MTA_OUTBOUND_TIMEOUT_SECONDS: '5',
        MTA_RETRY_MIN_SECONDS: '0.2',
        MTA_RETRY_MAX_SECONDS: String(LEASE_S),
        MTA_RATE_LIMIT: '0',
        MTA_LOG_LEVEL: 'info',
        ...(process.env.MTA_PG_CLIENT ? { MTA_PG_CLIENT: process.env.MTA_PG_CLIENT } : {}), // libpq or the worker
      });
    let db: DB = openDb(dirA, { databaseUrl: url });
    const ctx = { db, config: loadConfig({ env: env(dirA) }), now: Date.now, log: pino({ level: 'silent' }) };
    const team = await createTeam(ctx, 'outage');
    const key = (await createKey(ctx, team.id, { mode: 'live', scopes: ['emails:send', 'emails:read'] })).key;
    const dom = insertVerifiedDomain(db, team.id, 'sender.test');
    dns.set(`${dom.selector}._domainkey.sender.test`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
    db.close();

    const nodes = [await serveChild(env(dirA)), await serveChild(env(tempDir('mta-outage-b-')))];
    for (const n of nodes) children.push(n.child);
    const [a, b] = nodes;
    contract = await servedContract(a.url);

    // Light load: N emails through both APIs, the MX slow enough that some are in flight at the stop.
    const accepted: string[] = [];
    for (let i = 0; i < N; i++) {
      const r = await postEmail(nodes[i % 2].url, key, i);
      expect(r.status, await r.clone().text()).to.equal(202);
      accepted.push(`u${i}@rcpt.test`);
    }
    // Light load across the stop: 4 posters, each email answered 202 is counted as accepted (503 meanwhile).
    let posting = true;
    const poster = async (p: number) => {
      for (let i = 0; posting; i++) {
        const url = nodes[p % 2].url;
        const r = await rawPost(url, key, 10_000 + 1000 * p + i).catch(() => null); // the connection may fail
        if (r) await described(url, r);
        if (r?.status === 202) accepted.push(`u${10_000 + 1000 * p + i}@rcpt.test`);
        else if (r && r.status !== 503) throw new Error(`${r.status} ${await r.text()}`);
        await sleep(50);
      }
    };
    const posters = Promise.all([0, 1, 2, 3].map(poster));
    while (mx.messages.length < 3) await sleep(20);
    await pgc.pause!();
    const stoppedAt = Date.now();
    await sleep(1500);
    for (const n of nodes) expect(n.died(), 'node alive').to.equal(null);

    const down = await postEmail(a.url, key, 1000);
    const downBody = (await down.json()) as { error: { type: string; code: string } };
    expect(down.status, JSON.stringify(downBody)).to.equal(503);
    expect(downBody.error).to.include({ type: 'api_error', code: 'store_unavailable' });
    expect(Number(down.headers.get('retry-after'))).to.be.greaterThan(0);
    expect((await fetch(`${b.url}/healthz`)).status).to.equal(503);
    expect(await smtpReply(portOf(a.log(), 'submission'), key)).to.match(/^451 4\.3\.0 /);
    expect(await smtpReply(portOf(b.log(), 'smtp'))).to.match(/^451 4\.3\.0 /);
    await sleep(Math.max(0, 5000 - (Date.now() - stoppedAt))); // a few seconds of outage
    for (const n of nodes) expect(n.died(), 'node alive').to.equal(null);

    posting = false;
    await posters;
    await pgc.resume!();
    const resumedAt = Date.now();
    // Each node takes emails again: how long after the database returned.
    const backAfter: number[] = [];
    for (const [k, n] of nodes.entries()) {
      for (let i = 0; Date.now() - resumedAt < 30_000; i++) {
        const r = await postEmail(n.url, key, 2000 + 100 * k + i);
        if (r.status === 202) {
          accepted.push(`u${2000 + 100 * k + i}@rcpt.test`);
          backAfter.push(Date.now() - resumedAt);
          break;
        }
        await sleep(100);
      }
    }
    expect(backAfter.length, 'both nodes take emails again').to.equal(2);
    for (const n of nodes) expect((await fetch(`${n.url}/healthz`)).status).to.equal(200);

    // Every accepted email reaches the MX well before the lease of a claim made before the stop would end.
    const want = new Set(accepted);
    const seen = new Map<string, number>();
    const count = () => {
      seen.clear();
      for (const m of mx.messages) for (const to of m.to) seen.set(to, (seen.get(to) ?? 0) + 1);
      return [...want].filter((r) => seen.has(r)).length;
    };
    const until = Date.now() + 45_000;
    while (Date.now() < until && count() < want.size) await sleep(100);
    if (count() < want.size) {
      // what the store and the nodes say of the ones missing (a result not recorded, a lease, a status)
      const missing = [...want].filter((r) => !seen.has(r));
      const check = openDb(dirA, { databaseUrl: url });
      const rows = missing.map((r) =>
        check
          .prepare('SELECT recipient, status, attempts, leased_until, last_reply FROM deliveries WHERE recipient = ?')
          .get(r),
      );
      check.close();
      const said = nodes.flatMap((n) =>
        n
          .log()
          .split('\n')
          .filter((l) => /"level":(40|50|60)/.test(l))
          .slice(-20),
      );
      console.log(`      missing at the MX: ${JSON.stringify(rows)}\n      nodes' warnings: ${said.join('\n')}`);
    }
    expect(count(), `delivered within 45 s (lease ${LEASE_S} s)`).to.equal(want.size);
    // And the store says so: no delivery left leased or waiting (results written once the database was back).
    db = openDb(dirA, { databaseUrl: url });
    const unfinished = () =>
      db
        .prepare(
          `SELECT recipient, status, leased_until FROM deliveries WHERE status NOT IN ('delivered', 'bounced', 'failed', 'canceled')`,
        )
        .all() as { recipient: string; status: string; leased_until: number | null }[];
    while (Date.now() < until && unfinished().length) await sleep(100);
    const left = unfinished();
    db.close();
    expect(left, `no delivery left unfinished: ${nodes.map((n) => n.errors().join('\n')).join('\n')}`).to.deep.equal(
      [],
    );
    const twice = [...seen].filter(([, n]) => n > 1).length;
    for (const n of nodes) expect(n.died(), 'node alive').to.equal(null);
    // Each loop logs the outage once (and its end), not every attempt.
    for (const n of nodes) {
      const times = new Map<string, number>();
      for (const l of n.errors()) times.set(JSON.parse(l).msg, (times.get(JSON.parse(l).msg) ?? 0) + 1);
      for (const [msg, k] of times) expect(k, `logged ${k} times: ${msg}`).to.be.at.most(2);
    }
    console.log(
      `      API 202 again ${backAfter.join(' ms and ')} ms after the database returned; duplicates at the MX ${twice} of ${want.size}`,
    );
  });
});
