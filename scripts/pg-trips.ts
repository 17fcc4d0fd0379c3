// What one test email costs on PostgreSQL, from the service's own /metrics (deterministic, unlike timings):
// statements, round trips and main-thread waiting per email, accepted one at a time and 32 at a time, each
// followed by its test-mode simulation. With PG_TRIPS_TRACE=<file> the service logs every round trip of the
// sequential part (MTA_PG_TRACE) and the script prints the trace of one email.
//   BENCH_PG_URL=postgres://… npx tsx scripts/pg-trips.ts [emails]
import fs from 'node:fs';
import autocannon from 'autocannon';
import { startChild, mta, pgDatabaseUrl, SIGNIN_EMAIL } from './bench-lib.js';

const n = Number(process.argv[2] ?? 400);
const traceFile = process.env.PG_TRIPS_TRACE;

async function metrics(http: string) {
  const text = await (await fetch(`${http}/metrics`)).text();
  const v = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    statements: v('mta_db_statements_total'),
    roundTrips: v('mta_db_round_trips_total'),
    wait: v('mta_db_wait_seconds_total'),
    pending: v('mta_deliveries_pending'),
    cpu: v('process_cpu_seconds_total'),
  };
}

async function settle(http: string) {
  for (let i = 0; i < 200; i++) {
    await new Promise((r) => setTimeout(r, 100));
    if ((await metrics(http)).pending === 0) break;
  }
  await new Promise((r) => setTimeout(r, 300));
}

const child = await startChild({
  MTA_DATABASE_URL: await pgDatabaseUrl(),
  ...(traceFile ? { MTA_PG_TRACE: traceFile } : {}),
});
try {
  mta(child, 'team', 'create', 'bench');
  const key = mta(child, 'key', 'create', '--team', 'bench');
  const body = SIGNIN_EMAIL;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const post = async () => {
    const r = await fetch(`${child.http}/v1/emails`, { method: 'POST', headers, body });
    if (r.status !== 202) throw new Error(`${r.status} ${await r.text()}`);
  };
  for (let i = 0; i < 20; i++) await post(); // warm-up: statements prepared, caches filled
  await settle(child.http);

  const measure = async (label: string, emails: number, parallel: number, pause: boolean) => {
    const a = await metrics(child.http);
    let left = emails;
    const worker = async () => {
      while (left-- > 0) {
        await post();
        if (pause) await new Promise((r) => setTimeout(r, 20)); // let the simulation run on its own
      }
    };
    await Promise.all(Array.from({ length: parallel }, worker));
    await settle(child.http);
    const b = await metrics(child.http);
    const per = (k: 'statements' | 'roundTrips' | 'wait') => (b[k] - a[k]) / emails;
    console.log(
      `${label}: ${per('statements').toFixed(2)} statements, ${per('roundTrips').toFixed(2)} round trips, ${(per('wait') * 1000).toFixed(2)} ms waiting per email (${emails} emails)`,
    );
  };

  if (traceFile) {
    const from = fs.existsSync(traceFile) ? fs.statSync(traceFile).size : 0;
    await post();
    await settle(child.http);
    const t = fs.readFileSync(traceFile, 'utf8').slice(from);
    console.log(`--- trace of one email (accept, simulation, one /metrics scrape) ---\n${t}`);
  }
  await measure('one at a time', Math.min(n, 200), 1, true);
  await measure('32 at a time', n * 4, 32, false);
  // The API bench's load (autocannon, 32 connections, 5 s): where the service's main thread spends each email.
  const a = await metrics(child.http);
  const r = await autocannon({
    url: `${child.http}/v1/emails`,
    method: 'POST',
    headers,
    body,
    connections: 32,
    duration: 5,
  });
  await settle(child.http);
  const b = await metrics(child.http);
  const k = r['2xx'];
  console.log(
    `autocannon 32 connections: ${(k / 5).toFixed(0)} accepted/s; per email ${((b.statements - a.statements) / k).toFixed(2)} statements, ${((b.roundTrips - a.roundTrips) / k).toFixed(2)} round trips, ${(((b.wait - a.wait) / k) * 1e6).toFixed(0)} µs waiting, ${(((b.cpu - a.cpu) / k) * 1e6).toFixed(0)} µs of process CPU`,
  );
} finally {
  await child.stop();
}
