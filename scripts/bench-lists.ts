// `npm run bench -- lists`: median latency of GET /v1/emails with each filter a key can send (status, test_mode,
// tag, q, a deep cursor; a live key and a test key), GET /v1/emails/{id} and its events, through the real HTTP API of
// the service (a child process), with 10^3 and then 10^6 stored emails of one team (test/helpers/email-fill.ts: 99%
// delivered, none bounced, 0.1% test mode, written straight into the store). BENCH_LIST_SIZES=1000,200000 picks the
// sizes; BENCH_ENGINE=pg runs it on PostgreSQL (the fill ends with ANALYZE).
import { openDb } from '../src/store/db.js';
import { encodeCursor } from '../src/services/emails.js';
import { runSync } from '../src/store/op.js';
import { fillEmails } from '../test/helpers/email-fill.js';
import { startChild, mta, fmt } from './bench-lib.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 21);

/** [name, key ('live' | 'test'), path after /v1/emails]. */
const CASES: [string, 'live' | 'test', string][] = [
  ['list', 'live', '?limit=20'],
  ['status=bounced (none)', 'live', '?limit=20&status=bounced'],
  ['status=failed (0.5%)', 'live', '?limit=20&status=failed'],
  ['status=delivered (99%)', 'live', '?limit=20&status=delivered'],
  ['test_mode=true (0.1%)', 'live', '?limit=20&test_mode=true'],
  ['test_mode=false', 'live', '?limit=20&test_mode=false'],
  ['test_mode=false&status=bounced', 'live', '?limit=20&test_mode=false&status=bounced'],
  ['test_mode=false&status=failed', 'live', '?limit=20&test_mode=false&status=failed'],
  ['deep cursor', 'live', '?limit=20&cursor=DEEP'],
  ['deep cursor&status=failed', 'live', '?limit=20&status=failed&cursor=DEEP'],
  ['tag=news (10%)', 'live', '?limit=20&tag=news'],
  ['tag=rare (0.1%)', 'live', '?limit=20&tag=rare'],
  ['tag=news&status=bounced', 'live', '?limit=20&tag=news&status=bounced'],
  ['q=user7@ (0.1%)', 'live', '?limit=20&q=user7@'],
  ['q=nobody (none)', 'live', '?limit=20&q=nobody'],
  ['test key: list', 'test', '?limit=20'],
  ['test key: status=bounced', 'test', '?limit=20&status=bounced'],
  ['test key: status=delivered', 'test', '?limit=20&status=delivered'],
  ['test key: tag=news', 'test', '?limit=20&tag=news'],
  ['get', 'test', '/ID'],
  ['events', 'test', '/ID/events'],
];

async function median(url: string, key: string): Promise<number> {
  const times: number[] = [];
  for (let i = -3; i < RUNS; i++) {
    const t = performance.now();
    const r = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    const body = await r.text();
    if (i === -3 && process.env.BENCH_TRACE) console.log(url, body.slice(0, 200));
    if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
    if (i >= 0) times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

async function run(n: number): Promise<Map<string, number>> {
  const child = await startChild();
  const out = new Map<string, number>();
  try {
    mta(child, 'team', 'create', 'bench');
    const keys = {
      live: mta(child, 'key', 'create', '--team', 'bench', '--mode', 'live'),
      test: mta(child, 'key', 'create', '--team', 'bench', '--mode', 'test'),
    };
    const db = openDb(child.dataDir, { databaseUrl: child.env.MTA_DATABASE_URL, synchronous: 'NORMAL' });
    const teamId = String(db.prepare("SELECT id FROM teams WHERE name = 'bench'").pluck().get());
    const t0 = performance.now();
    fillEmails(db, teamId, n);
    const filled = performance.now() - t0;
    // The oldest thousandth of the team: a page there walks past almost every row with an index that does not fit.
    const deep = runSync(
      encodeCursor(db, 'em', Number(db.prepare('SELECT min(seq) FROM emails').pluck().get()) + n / 1000),
    );
    db.close();
    const sent = await fetch(`${child.http}/v1/emails`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.test}`, 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'a@sender.test', to: ['delivered@example.com'], subject: 's', text: 't' }),
    });
    const id = ((await sent.json()) as { id: string }).id;
    console.log(`lists, ${n} emails (filled in ${fmt(filled / 1000)} s):`);
    for (const [name, key, path] of CASES) {
      const url = `${child.http}/v1/emails${path.replace('DEEP', deep).replace('ID', id)}`;
      const ms = await median(url, keys[key]);
      out.set(name, ms);
      console.log(`  ${name.padEnd(34)} ${fmt(ms, 2).padStart(8)} ms`);
    }
  } finally {
    await child.stop();
  }
  return out;
}

export async function benchLists(): Promise<void> {
  const sizes = (process.env.BENCH_LIST_SIZES ?? '1000,1000000').split(',').map(Number);
  const results = [];
  for (const n of sizes) results.push([n, await run(n)] as const);
  console.log(`lists: median of ${RUNS} requests (ms), ${sizes.join(' | ')} emails`);
  for (const [name] of CASES) console.log(`| ${name} | ${results.map(([, r]) => fmt(r.get(name)!, 2)).join(' | ')} |`);
}
