// Delivery benchmark: the real service (child process, `mta serve`) delivering live, DKIM-signed
// emails to a loopback SMTP sink (Postfix smtp-sink when installed, else an smtp-server sink), with
// a loopback DNS server for the MX records. Prints msgs/s and accept→delivered latency percentiles.
import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { TestDns } from '../test/helpers/dns.js';
import { insertVerifiedDomain } from '../test/helpers/factories.js';
import { openDb, type DB } from '../src/store/db.js';
import { loadConfig } from '../src/config/load.js';
import { createTeam, createKey } from '../src/services/keys.js';
import { addCredits } from '../src/services/credits.js';
import { submitEmail } from '../src/services/emails.js';
import { startChild, pct, fmt, memoryOf } from './bench-lib.js';

const freePort = () => new Promise<number>((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); });
});

/** A sink that accepts everything: Postfix smtp-sink (C) if present, else smtp-server in this process. */
async function startSink(port: number): Promise<{ kind: string; stop(): void }> {
  const proc: ChildProcess = spawn('smtp-sink', ['-u', 'nobody', `127.0.0.1:${port}`, '1024'], { stdio: 'ignore' });
  const ok = await new Promise<boolean>((resolve) => {
    proc.once('error', () => resolve(false));
    const t = setInterval(() => { const c = net.connect(port, '127.0.0.1', () => { c.destroy(); clearInterval(t); resolve(true); }); c.on('error', () => {}); }, 50);
  });
  if (ok) return { kind: 'postfix smtp-sink', stop: () => proc.kill() };
  const server = new SMTPServer({ authOptional: true, disabledCommands: ['AUTH', 'STARTTLS'], logger: false, onData: (s, _x, cb) => { s.resume(); s.on('end', () => cb()); } });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return { kind: 'smtp-server (in the bench process)', stop: () => server.close() };
}

async function waitDelivered(db: DB, n: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  const q = db.prepare("SELECT count(*) AS n FROM deliveries WHERE status = 'delivered'");
  while (Date.now() < until) {
    if ((q.get() as { n: number }).n >= n) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`only ${(q.get() as { n: number }).n} of ${n} delivered in time`);
}

/** Per email: created_at → its recipient's delivered event (the service's clock for both). */
function figures(db: DB, sinceSeq: number) {
  const rows = db.prepare(`SELECT e.created_at AS c, v.created_at AS d FROM emails e JOIN events v ON v.email_seq = e.seq
    AND v.type = 'delivered' AND v.recipient IS NOT NULL WHERE e.seq > ?`).all(sinceSeq) as { c: number; d: number }[];
  const lat = rows.map((r) => r.d - r.c).sort((a, b) => a - b);
  const first = Math.min(...rows.map((r) => r.d));
  const last = Math.max(...rows.map((r) => r.d));
  return { n: rows.length, first, last, p50: pct(lat, 50), p95: pct(lat, 95), p99: pct(lat, 99) };
}

export async function benchDelivery(opts: { n?: number; paced?: number; rate?: number } = {}): Promise<void> {
  const n = opts.n ?? Number(process.env.BENCH_EMAILS ?? 5000);
  const paced = opts.paced ?? Number(process.env.BENCH_PACED ?? 1000);
  const rate = opts.rate ?? Number(process.env.BENCH_RATE ?? 200);
  const dns = await new TestDns().start();
  const domains = Array.from({ length: 10 }, (_, i) => `d${i}.bench`);
  for (const d of domains) { dns.set(d, { MX: [{ exchange: `mx.${d}`, priority: 10 }] }); dns.set(`mx.${d}`, { A: ['127.0.0.1'] }); }
  const sinkPort = await freePort();
  const sink = await startSink(sinkPort);
  const env = { MTA_DNS_SERVERS: dns.server, MTA_OUTBOUND_PORT: String(sinkPort), MTA_LOG_LEVEL: 'info', MTA_OUTBOUND_TLS: 'opportunistic' };
  // Prepare the store before the service starts: team, live key, credits, a verified domain with its key in DNS.
  const child0 = { dataDir: '' };
  const { mkdtempSync } = await import('node:fs');
  child0.dataDir = mkdtempSync('/tmp/mta-bench-delivery-');
  const db = openDb(child0.dataDir);
  const ctx = { db, config: loadConfig({ env: { MTA_DATA_DIR: child0.dataDir, ...env } }), now: Date.now, log: pino({ level: 'silent' }) };
  const team = createTeam(ctx, 'bench');
  const key = createKey(ctx, team.id, { mode: 'live', scopes: ['emails:send', 'emails:read'] });
  addCredits(ctx, team.id, n + paced + 10, null);
  const dom = insertVerifiedDomain(db, team.id, 'sender.bench');
  dns.set(`${dom.selector}._domainkey.sender.bench`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
  const principal = { keyId: 'bench', teamId: team.id, mode: 'live' as const, scopes: new Set(['emails:send']) };
  const body = (i: number) => ({ from: 'Bench <app@sender.bench>', to: `user${i}@${domains[i % domains.length]}`, subject: `Receipt #${i}`, text: `Thanks for your order ${i}.\n`.repeat(10), html: `<p>Thanks for your order <b>${i}</b>.</p>`.repeat(10) });
  for (let i = 0; i < n; i++) await submitEmail(ctx, principal, body(i));
  console.log(`delivery: ${n} emails queued; sink: ${sink.kind}; DKIM rsa-2048 on`);

  const child = await startChild({ ...env, MTA_DATA_DIR: child0.dataDir }, (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean));
  const t0 = Date.now();
  await waitDelivered(db, n, 600_000);
  const a = figures(db, 0);
  console.log(`delivery: drained ${a.n} in ${fmt((Date.now() - t0) / 1000, 2)} s; ${fmt(a.n / ((a.last - a.first) / 1000), 0)} msgs/s delivered (first→last delivered event)`);

  // Paced API sends on an idle queue: accept→delivered latency.
  const lastSeq = (db.prepare('SELECT max(seq) AS s FROM emails').get() as { s: number }).s;
  const headers = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };
  const start = Date.now();
  const sends: Promise<Response>[] = [];
  for (let i = 0; i < paced; i++) {
    const due = start + (i * 1000) / rate;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    sends.push(fetch(`${child.http}/v1/emails`, { method: 'POST', headers, body: JSON.stringify(body(n + i)) }));
  }
  await Promise.all(sends);
  await waitDelivered(db, n + paced, 120_000);
  const b = figures(db, lastSeq);
  console.log(`delivery: ${b.n} emails via the API at ${rate}/s: accept→delivered p50 ${b.p50} ms, p95 ${b.p95} ms, p99 ${b.p99} ms`);
  console.log(`delivery: service after the run: ${await memoryOf(child)}`);
  await child.stop();
  sink.stop();
  await dns.stop();
  db.close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchDelivery();
  process.exit(0);
}
