// Queue purge benchmark (issue 13): the real service (child process, `mta serve`) defers 10,000 live recipients
// against a loopback MX answering 451, then purges them through the admin API while clients keep posting
// `POST /v1/emails`. Prints the purge's duration and the API p50/p99 before and during it, with the load average.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { TestDns } from '../test/helpers/dns.js';
import { insertVerifiedDomain } from '../test/helpers/factories.js';
import { openDb } from '../src/store/db.js';
import { loadConfig } from '../src/config/load.js';
import { createTeamPlan, createKeyPlan } from '../src/services/keys.js';
import { runSync } from '../src/store/op.js';
import { addCreditsPlan } from '../src/services/credits.js';
import { startChild, pct, fmt, memoryOf, type Child } from './bench-lib.js';

const TOKEN = 'bench-admin-token-0123456789abcdef';
const SLOW = 'slow.bench';
const FAST = 'fast.bench';

/** A loopback MX: 451 for every recipient at SLOW, accepts the rest. */
async function startMx(): Promise<{ port: number; stop(): Promise<void> }> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    onRcptTo: (a, _s, cb) =>
      a.address.endsWith(`@${SLOW}`)
        ? cb(Object.assign(new Error('4.7.1 Try again later'), { responseCode: 451 }))
        : cb(),
    onData: (s, _session, cb) => s.resume().on('end', () => cb()),
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.server.address() as { port: number }).port,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A webhook receiver on loopback answering 200; counts what it got. */
async function startReceiver(): Promise<{ url: string; got: () => number; stop(): Promise<void> }> {
  let got = 0;
  const server = http.createServer((req, res) => req.resume().on('end', () => (got++, res.end('ok'))));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    got: () => got,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A data folder with a team, a live key, credits and a DKIM-verified sender domain published in `dns`. */
async function prepare(env: Record<string, string>, dns: TestDns, n: number): Promise<string> {
  const db = openDb(env.MTA_DATA_DIR);
  const ctx = { db, config: loadConfig({ env }), now: Date.now, log: pino({ level: 'silent' }) };
  const team = runSync(createTeamPlan(ctx, 'bench'));
  const key = runSync(createKeyPlan(ctx, team.id, { mode: 'live', scopes: ['emails:send', 'webhooks:write'] })).key;
  runSync(addCreditsPlan(ctx, team.id, n + 100_000, null));
  const dom = insertVerifiedDomain(db, team.id, 'sender.bench');
  dns.set(`${dom.selector}._domainkey.sender.bench`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
  db.close();
  return key;
}

const admin = async (child: Child, method: string, p: string, body?: unknown) => {
  const r = await fetch(`${child.http}/admin/v1${p}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status !== 200) throw new Error(`${method} /admin/v1${p}: ${r.status} ${await r.text()}`);
  return r.json() as Promise<Record<string, unknown>>;
};

/** Queues n recipients at SLOW (emails of 50, batches of 100 emails) and waits until the loop has deferred them all. */
async function queueDeferred(child: Child, headers: Record<string, string>, n: number): Promise<number> {
  const email = (i: number) => ({
    from: 'Bench <app@sender.bench>',
    to: Array.from({ length: 50 }, (_, j) => `u${i * 50 + j}@${SLOW}`),
    subject: `Newsletter ${i}`,
    text: 'This week in the shop.\n'.repeat(10),
  });
  const t0 = Date.now();
  for (let i = 0; i < n / 50; i += 100) {
    const body = JSON.stringify(Array.from({ length: Math.min(100, n / 50 - i) }, (_, j) => email(i + j)));
    const r = await fetch(`${child.http}/v1/emails/batch`, { method: 'POST', headers, body });
    if (r.status !== 202) throw new Error(`POST /v1/emails/batch: ${r.status} ${await r.text()}`);
  }
  for (const end = Date.now() + 600_000; Date.now() < end; await new Promise((r) => setTimeout(r, 500))) {
    const s = (await admin(child, 'GET', `/queue/summary?by=state&domain=${SLOW}`)) as {
      groups: { key: string; recipients: number }[];
    };
    if (s.groups.find((g) => g.key === 'deferred')?.recipients === n) return Date.now() - t0;
  }
  throw new Error(`the loop did not defer ${n} recipients in 10 minutes\n${child.logTail.join('\n')}`);
}

/** `clients` loops posting one email each to FAST until `stop()` says so; latencies (ms) into `into`. */
function load(child: Child, headers: Record<string, string>, clients: number, into: () => number[]) {
  let on = true;
  const body = JSON.stringify({ from: 'Bench <app@sender.bench>', to: `x@${FAST}`, subject: 'Code', text: '123456' });
  const worker = async () => {
    while (on) {
      const t = performance.now();
      const r = await fetch(`${child.http}/v1/emails`, { method: 'POST', headers, body });
      await r.arrayBuffer();
      if (r.status !== 202) throw new Error(`POST /v1/emails: ${r.status}\n${child.logTail.join('\n')}`);
      into().push(performance.now() - t);
    }
  };
  const running = Promise.all(Array.from({ length: clients }, worker));
  return () => ((on = false), running);
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${fmt(pct(s, 50) ?? NaN)} ms, p99 ${fmt(pct(s, 99) ?? NaN)} ms (${s.length} requests)`;
};

export async function benchPurge(opts: { recipients?: number; clients?: number } = {}): Promise<void> {
  const n = opts.recipients ?? 10_000;
  const clients = opts.clients ?? 4;
  const dns = await new TestDns().start();
  for (const d of [SLOW, FAST]) {
    dns.set(d, { MX: [{ exchange: `mx.${d}`, priority: 10 }] });
    dns.set(`mx.${d}`, { A: ['127.0.0.1'] });
  }
  const mx = await startMx();
  const rx = await startReceiver();
  const env: Record<string, string> = {
    MTA_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'mta-bench-purge-')),
    MTA_DNS_SERVERS: dns.server,
    MTA_OUTBOUND_PORT: String(mx.port),
    MTA_ADMIN_TOKEN: TOKEN,
    MTA_RETRY_MIN_SECONDS: '3600',
    MTA_RETRY_MAX_SECONDS: '7200',
    MTA_DNS_CHECK_CRON: '0 0 1 1 *',
    MTA_ALLOW_PRIVATE_WEBHOOKS: '1', // the receiver is on loopback
  };
  const key = await prepare(env, dns, n);
  const child = await startChild(env);
  try {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    // One endpoint subscribed to failed: each purged recipient also writes a webhook outbox row.
    const hook = await fetch(`${child.http}/v1/webhooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: rx.url, events: ['failed'] }),
    });
    if (hook.status !== 201) throw new Error(`POST /v1/webhooks: ${hook.status} ${await hook.text()}`);
    const queued = await queueDeferred(child, headers, n);
    console.log(`purge: ${n} recipients at ${SLOW} deferred by the loop (451) in ${fmt(queued / 1000, 1)} s`);
    let lat: number[] = [];
    const before = lat;
    const stop = load(child, headers, clients, () => lat);
    await new Promise((r) => setTimeout(r, 5000));
    const during: number[] = (lat = []);
    const t0 = performance.now();
    const r = await admin(child, 'POST', '/queue/purge', { domain: SLOW, reason: 'bench' });
    const ms = performance.now() - t0;
    await stop();
    console.log(
      `purge: POST /admin/v1/queue/purge matched ${r.matched} in ${fmt(ms / 1000, 2)} s (${rx.got()} failed webhooks received by then)`,
    );
    console.log(`purge: POST /v1/emails (${clients} clients) before: ${stats(before)}; during: ${stats(during)}`);
    console.log(
      `purge: load average ${os
        .loadavg()
        .map((l) => fmt(l, 2))
        .join(' ')} (${os.cpus().length} cpus)`,
    );
    console.log(`purge: service after the run: ${await memoryOf(child)}`);
  } finally {
    await child.stop();
    await mx.stop();
    await rx.stop();
    await dns.stop();
  }
}
