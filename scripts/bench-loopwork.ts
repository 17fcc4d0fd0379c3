// `npm run bench -- loopwork`: the delivery loop's store work alone, in this process, no network: N live emails
// submitted through submitEmail, then claimed in batches of 200, confirmed, and settled as delivered through the
// ResultSink (the exact calls the loop makes), timed per phase. Figures in µs per recipient.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { openDb } from '../src/store/db.js';
import { loadConfig } from '../src/config/load.js';
import { createTeamPlan } from '../src/services/keys.js';
import { runSync } from '../src/store/op.js';
import { addCreditsPlan } from '../src/services/credits.js';
import { insertVerifiedDomain } from '../test/helpers/factories.js';
import { submitEmail } from '../src/services/emails.js';
import { claimDue, confirmClaims, emailBySeq, lightTx } from '../src/services/delivery.js';
import { ResultSink } from '../src/outbound/results.js';
import { toOutcome } from '../src/outbound/outcome.js';

export async function benchLoopWork(n = Number(process.env.BENCH_EMAILS ?? 10000)): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mta-bench-loopwork-'));
  const db = openDb(dataDir);
  const config = loadConfig({ env: { MTA_DATA_DIR: dataDir } });
  const ctx = { db, config, now: Date.now, log: pino({ level: 'silent' }) };
  // BENCH_NO_TRIGGERS=1: without the deliveries' counter triggers; BENCH_DROP_TRIGGERS=a,b: without those.
  const drop = process.env.BENCH_DROP_TRIGGERS?.split(',');
  if (process.env.BENCH_NO_TRIGGERS === '1' || drop)
    for (const { name } of db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'deliveries'`)
      .all() as { name: string }[])
      if (!drop || drop.includes(name)) db.exec(`DROP TRIGGER ${name}`);
  const team = runSync(createTeamPlan(ctx, 'bench'));
  runSync(addCreditsPlan(ctx, team.id, n + 10, null));
  insertVerifiedDomain(db, team.id, 'sender.bench');
  const principal = { keyId: 'bench', teamId: team.id, mode: 'live' as const, scopes: new Set(['emails:send']) };
  let t = performance.now();
  for (let i = 0; i < n; i++)
    await submitEmail(ctx, principal, {
      from: 'Bench <app@sender.bench>',
      to: `user${i}@gmail.bench`,
      subject: `Receipt #${i}`,
      text: `Thanks for your order ${i}.\n`.repeat(10),
      html: `<p>Thanks for your order <b>${i}</b>.</p>`.repeat(10),
    } as never);
  const submit = performance.now() - t;
  const policy = {
    minSeconds: config.retryMinSeconds,
    maxSeconds: config.retryMaxSeconds,
    lifetimeSeconds: config.queueLifetimeSeconds,
  };
  const sink = new ResultSink(ctx, () => {}, { delayMs: 1e9, max: 200 });
  const time = { claim: 0, email: 0, confirm: 0, results: 0 };
  let done = 0;
  while (done < n) {
    const now = Date.now();
    t = performance.now();
    const rows = lightTx(db, () => claimDue(db, now, now + 60_000, 200));
    time.claim += performance.now() - t;
    if (!rows.length) break;
    t = performance.now();
    for (const r of rows) emailBySeq(db, r.email_seq);
    time.email += performance.now() - t;
    t = performance.now();
    for (let i = 0; i < rows.length; i += 10)
      lightTx(db, () =>
        confirmClaims(
          db,
          rows.slice(i, i + 10).map((r) => r.id),
          rows.slice(i, i + 10).map((r) => r.leased_until),
          now + 60_000,
        ),
      );
    time.confirm += performance.now() - t;
    t = performance.now();
    for (const r of rows) {
      const o = toOutcome(
        r,
        { kind: 'accepted', reply: '250 2.0.0 Ok: queued as X' },
        { duration_ms: 3, source: 'smtp' } as never,
        policy,
        Date.now(),
        0.5,
      );
      sink.push(r.email_seq, [o], [r.id], 'gmail.bench');
    }
    sink.flush();
    time.results += performance.now() - t;
    done += rows.length;
  }
  const us = (ms: number) => ((ms * 1000) / n).toFixed(1);
  console.log(
    `loopwork: ${done} recipients; µs per recipient: submit ${us(submit)}, claim ${us(time.claim)}, email row ${us(time.email)}, confirm (10 at a time) ${us(time.confirm)}, results ${us(time.results)}; loop total ${us(time.claim + time.email + time.confirm + time.results)}`,
  );
  db.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
