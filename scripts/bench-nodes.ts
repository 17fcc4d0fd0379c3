// `npm run bench -- nodes`: PostgreSQL with one and with two `mta serve` processes on one database (issue 15).
// API: durable 202/s from POST /v1/emails (autocannon against each node at once). Delivery: live DKIM-signed
// emails posted through the nodes' APIs to one recipient domain, first request → last message at a loopback sink.
// Starts a throwaway PostgreSQL cluster (fsync on) unless BENCH_PG_URL names a server. Figures, not pass/fail.
// BENCH_NODES=1,2,3 picks the node counts; BENCH_NODES_API_ONLY=1 skips the delivery runs.
import os from 'node:os';
import pino from 'pino';
import autocannon from 'autocannon';
import { SMTPServer } from 'smtp-server';
import { TestDns } from '../test/helpers/dns.js';
import { insertVerifiedDomain } from '../test/helpers/factories.js';
import { openDb } from '../src/store/db.js';
import { loadConfig } from '../src/config/load.js';
import { createTeamPlan, createKeyPlan } from '../src/services/keys.js';
import { runSync } from '../src/store/op.js';
import { addCreditsPlan } from '../src/services/credits.js';
import { startChild, fmt, memoryOf, pgDatabaseUrl, type Child, SIGNIN_EMAIL } from './bench-lib.js';

/** Starts `nodes` services on one new database; a team with a live and a test key and a verified domain. */
async function cluster(nodes: number, env: Record<string, string>) {
  const url = await pgDatabaseUrl();
  const all = { ...env, MTA_DATABASE_URL: url, MTA_DNS_CHECK_CRON: '0 0 1 1 *' };
  const db = openDb('', { databaseUrl: url });
  const ctx = {
    db,
    config: loadConfig({ env: { MTA_DATA_DIR: os.tmpdir(), ...all } }),
    now: Date.now,
    log: pino({ level: 'silent' }),
  };
  const team = runSync(createTeamPlan(ctx, 'bench'));
  const live = runSync(createKeyPlan(ctx, team.id, { mode: 'live', scopes: ['emails:send'] })).key;
  const test = runSync(createKeyPlan(ctx, team.id, { mode: 'test', scopes: ['emails:send'] })).key;
  runSync(addCreditsPlan(ctx, team.id, 1_000_000, null));
  const dom = insertVerifiedDomain(db, team.id, 'sender.bench');
  db.close();
  const children: Child[] = [];
  for (let i = 0; i < nodes; i++) children.push(await startChild(all));
  return { children, live, test, dom, stop: () => Promise.all(children.map((c) => c.stop())) };
}

async function api(nodes: number, seconds: number): Promise<void> {
  const c = await cluster(nodes, {});
  const body = SIGNIN_EMAIL;
  const headers = { authorization: `Bearer ${c.test}`, 'content-type': 'application/json' };
  const run = (url: string, duration: number, connections: number) =>
    autocannon({ url: `${url}/v1/emails`, method: 'POST', headers, body, connections, duration });
  await Promise.all(c.children.map((ch) => run(ch.http, 2, 8))); // warm-up
  const load = os.loadavg()[0];
  const rs = await Promise.all(c.children.map((ch) => run(ch.http, seconds, 32 / nodes)));
  const ok = rs.reduce((n, r) => n + r['2xx'], 0);
  const p99 = Math.max(...rs.map((r) => r.latency.p99));
  console.log(
    `nodes[${nodes}] API on PostgreSQL: ${fmt(ok / seconds, 0)} accepted/s (202) in total, non-2xx ${rs.reduce((n, r) => n + r.non2xx, 0)}; p50 ${rs.map((r) => r.latency.p50).join('/')} ms, p99 ${p99} ms (32 connections over ${nodes} node(s), ${seconds} s, test key); load ${fmt(load, 2)}`,
  );
  for (const ch of c.children) console.log(`nodes[${nodes}]   ${ch.http}: ${await memoryOf(ch)}`);
  await c.stop();
}

async function delivery(nodes: number, n: number): Promise<void> {
  const dns = await new TestDns().start();
  let received = 0;
  let last = 0;
  const sink = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onData: (s, _session, cb) => {
      s.resume();
      s.on('end', () => {
        received++;
        last = Date.now();
        cb();
      });
    },
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  const port = (sink.server.address() as { port: number }).port;
  dns.set('rcpt.bench', { MX: [{ exchange: 'mx.rcpt.bench', priority: 10 }] });
  dns.set('mx.rcpt.bench', { A: ['127.0.0.1'] });
  const c = await cluster(nodes, { MTA_DNS_SERVERS: dns.server, MTA_OUTBOUND_PORT: String(port) });
  dns.set(`${c.dom.selector}._domainkey.sender.bench`, { TXT: [`v=DKIM1; k=rsa; p=${c.dom.publicKey}`] });
  const headers = { authorization: `Bearer ${c.live}`, 'content-type': 'application/json' };
  let next = 0;
  const load = os.loadavg()[0];
  const t0 = Date.now();
  const worker = async (w: number) => {
    const url = c.children[w % nodes].http;
    while (next < n) {
      const i = next++;
      const r = await fetch(`${url}/v1/emails`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          from: 'app@sender.bench',
          to: `u${i}@rcpt.bench`,
          subject: `#${i}`,
          text: 'x'.repeat(400),
        }),
      });
      if (r.status !== 202) throw new Error(`POST ${r.status} ${await r.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, (_, w) => worker(w)));
  const posted = Date.now();
  const deadline = Date.now() + 600_000;
  while (received < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  console.log(
    `nodes[${nodes}] delivery on PostgreSQL: ${received}/${n} in ${fmt((last - t0) / 1000, 2)} s (posted after ${fmt((posted - t0) / 1000, 2)} s): ${fmt(received / ((last - t0) / 1000), 0)} msg/s first request → last message, one domain, DKIM; load ${fmt(load, 2)}`,
  );
  for (const ch of c.children) console.log(`nodes[${nodes}]   ${ch.http}: ${await memoryOf(ch)}`);
  await c.stop();
  await new Promise<void>((r) => sink.close(() => r()));
  await dns.stop();
}

export async function benchNodes(): Promise<void> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const n = Number(process.env.BENCH_EMAILS ?? 10_000);
  // BENCH_NODES=1,2,3: the node counts to run (default 1 and 2).
  const counts = (process.env.BENCH_NODES ?? '1,2').split(',').map(Number);
  for (const nodes of counts) await api(nodes, seconds);
  if (process.env.BENCH_NODES_API_ONLY !== '1') for (const nodes of counts) await delivery(nodes, n);
  const { stopSharedPg } = await import('../test/helpers/pg.js');
  await stopSharedPg();
}
