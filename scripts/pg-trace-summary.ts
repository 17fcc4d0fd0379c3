// Sums up an MTA_PG_TRACE file (src/store/pg/sync-client.ts: one block per round trip, its statements then `# µs`)
// by the statement that made the round trip: a batch's last statement (the deferred writes before it ride along).
// Batches sent ahead without waiting (a transaction's writes and COMMIT, libpq) are logged with their time in flight,
// so the µs of the COMMIT rows are not all main-thread wait (the service's mta_db_wait_seconds_total is).
//   npx tsx scripts/pg-trace-summary.ts <trace file> [emails to divide by] [rows, default 25]
import fs from 'node:fs';

const [file, emailsArg, rowsArg] = process.argv.slice(2);
const emails = Number(emailsArg ?? 1);
const rows = Number(rowsArg ?? 25);
const blocks = fs
  .readFileSync(file, 'utf8')
  .split('\n\n')
  .map((b) => b.trim().split('\n'))
  .filter((l) => l.length > 1 && l[l.length - 1].startsWith('# '));

const groups = new Map<string, { trips: number; us: number; statements: number }>();
let totalUs = 0;
let totalStatements = 0;
for (const lines of blocks) {
  const us = Number(lines[lines.length - 1].slice(2));
  const statements = lines.slice(0, -1).map((l) => l.slice(l.indexOf('\t') + 1));
  const key = statements[statements.length - 1].slice(0, 160);
  const g = groups.get(key) ?? { trips: 0, us: 0, statements: 0 };
  g.trips++;
  g.us += us;
  g.statements += statements.length;
  groups.set(key, g);
  totalUs += us;
  totalStatements += statements.length;
}
const f = (n: number, d = 3) => n.toFixed(d);
console.log(
  `${blocks.length} round trips, ${totalStatements} statements, ${f(totalUs / 1e6, 2)} s logged; per email (÷${emails}): ${f(blocks.length / emails)} trips, ${f(totalStatements / emails)} statements, ${f(totalUs / 1000 / emails)} ms`,
);
console.log('trips/email  ms/email  µs/trip  stmts/trip  the statement that made the trip');
for (const [key, g] of [...groups].sort((a, b) => b[1].us - a[1].us).slice(0, rows))
  console.log(
    `${f(g.trips / emails).padStart(11)}  ${f(g.us / 1000 / emails).padStart(8)}  ${f(g.us / g.trips, 0).padStart(7)}  ${f(g.statements / g.trips, 1).padStart(10)}  ${key}`,
  );
