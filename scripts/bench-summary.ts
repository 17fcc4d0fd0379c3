// `npm run bench -- summary`: `mta queue summary` over 10^3 and 10^6 synthetic waiting recipients (emails of 50,
// 10 teams, 50 recipient domains, 2 sender domains, plus half as many delivered) in a fresh store, in every state
// (scheduled, due over the last hour, deferred, held, in flight, expired leases): the counters of migration 014
// against the row scan, by domain, team and state, unfiltered and with each filter the counters answer; the tag
// and age filters (row scan only); and the trigger cost of a claim and its settlement.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb, tx, type DB } from '../src/store/db.js';
import { insertEmail, type NewEmail } from '../src/store/emails.js';
import { insertTeam } from '../src/store/teams.js';
import { runSync } from '../src/store/op.js';
import { summarize, type QueueFilter } from '../src/store/queue-admin.js';
import { countable, summarizeFromCounts } from '../src/store/queue-counts.js';
import { claimDue, settleClaim } from '../src/store/queue.js';

const TEAMS = 10;
const DOMAINS = 50;
const PER_EMAIL = 50;

function email(team: number, i: number, now: number): NewEmail {
  return {
    id: `em_bench${i}`,
    team_id: `team_${team}`,
    test_mode: 0,
    status: 'queued',
    from_addr: 'a@sender.test',
    to_json: '[]',
    cc_json: null,
    bcc_json: null,
    reply_to: null,
    subject: 's',
    html: null,
    text: 't',
    tags_json: null,
    headers_json: null,
    tracking_opens: 0,
    tracking_clicks: 0,
    scheduled_at: null,
    credits_charged: PER_EMAIL,
    sender_domain: i % 4 === 0 ? 'alt.test' : 'sender.test',
    created_at: now - 3600e3 + i,
    updated_at: now,
    attachments_json: null,
    raw_message: 0,
  };
}

/** Emails i in [from, to): delivered ones first (as older mail), then waiting ones; every other email tagged. */
function fill(db: DB, from: number, to: number, status: 'queued' | 'delivered', now: number): void {
  for (let i = from; i < to; i += 1000)
    tx(db, () => {
      for (let j = i; j < Math.min(to, i + 1000); j++) {
        const e = { ...email(j % TEAMS, j, now), status };
        const rcpts = Array.from({ length: PER_EMAIL }, (_, k) => {
          const domain = `d${(j + k) % DOMAINS}.test`;
          return { recipient: `r${k}@${domain}`, kind: 'to' as const, domain, status, next_attempt_at: null };
        });
        runSync(insertEmail(db, e, j % 2 ? ['news'] : [], rcpts));
      }
    });
}

/**
 * The waiting recipients' states (through the triggers): a fifth scheduled 1-2 h ahead, a third deferred (half
 * of those due again, within the last 10 min, half 0-2 h ahead), the rest due over the last hour, a tenth held,
 * one in 1,000 in flight and one in 5,000 with a lease that ran out.
 */
const STATES = [
  "UPDATE deliveries SET next_attempt_at = @now - (id % 3600) * 1000 WHERE status = 'queued'",
  "UPDATE deliveries SET next_attempt_at = @now + 3600e3 + (id % 3600) * 1000 WHERE id % 5 = 0 AND status = 'queued'",
  `UPDATE deliveries SET attempts = 1, status = 'delivery_delayed',
    next_attempt_at = CASE WHEN id % 2 = 0 THEN @now - (id % 600) * 1000 ELSE @now + (id % 7200) * 1000 END
    WHERE id % 3 = 0 AND id % 5 <> 0 AND status = 'queued'`,
  `UPDATE deliveries SET held_at = 1, next_attempt_at = NULL WHERE id % 10 = 1
    AND status IN ('queued', 'delivery_delayed')`,
  `UPDATE deliveries SET leased_until = @now + 60000, next_attempt_at = @now + 60000 WHERE id % 1000 = 2
    AND status IN ('queued', 'delivery_delayed')`,
  `UPDATE deliveries SET leased_until = @now - 1000, next_attempt_at = @now - 1000 WHERE id % 5000 = 3
    AND status IN ('queued', 'delivery_delayed')`,
];

const time = <T>(fn: () => T): [T, number] => {
  const t = performance.now();
  const r = fn();
  return [r, performance.now() - t];
};

/** Summaries the counters answer (with the row scan to check them), then the row-scan-only filters. */
const CASES: [string, 'domain' | 'team' | 'state', QueueFilter][] = [
  ['by domain', 'domain', {}],
  ['by team', 'team', {}],
  ['by state', 'state', {}],
  ['by state, one team', 'state', { teamId: 'team_3' }],
  ['by state, one domain', 'state', { domains: ['d7.test'] }],
  ['by state, a site of 3 domains', 'state', { domains: ['d1.test', 'd2.test', 'd3.test'] }],
  ['by state, sender domain', 'state', { senderDomain: 'alt.test' }],
  ['by domain, state due', 'domain', { states: ['due'] }],
  ['by team, state in_flight', 'team', { states: ['in_flight'] }],
  ['by domain, team + state deferred', 'domain', { teamId: 'team_3', states: ['deferred'] }],
  ['by state, tag (row scan)', 'state', { tag: 'news' }],
  ['by state, tag + team (row scan)', 'state', { tag: 'news', teamId: 'team_3' }],
  ['by domain, older than 30 min (row scan)', 'domain', { createdBefore: Date.now() - 1800e3 }],
];

function run(waitingEmails: number): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mta-summary-'));
  const db = openDb(dir);
  const now = Date.now();
  for (let t = 0; t < TEAMS; t++) runSync(insertTeam(db, { id: `team_${t}`, name: `team${t}`, created_at: now }));
  const delivered = waitingEmails / 2;
  const [, filled] = time(() => {
    fill(db, 0, delivered, 'delivered', now);
    fill(db, delivered, delivered + waitingEmails, 'queued', now);
  });
  const n = waitingEmails * PER_EMAIL;
  const [, stated] = time(() => tx(db, () => STATES.forEach((s) => db.prepare(s).run({ now }))));
  console.log(
    `summary, ${n} waiting: ${filled.toFixed(0)} ms to write ${n * 1.5} recipients, ${stated.toFixed(0)} ms to set their states (triggers included)`,
  );
  for (const [name, by, f] of CASES) {
    if (!countable(f)) {
      const runs = [0, 1, 2].map(() => time(() => runSync(summarize(db, by, f, now)))[1].toFixed(1));
      console.log(`  ${name}: scan ${runs.join(' / ')} ms`);
      continue;
    }
    const runs = [0, 1, 2, 3, 4].map(() => time(() => summarizeFromCounts(db, by, f, now)));
    const [scan, scanMs] = time(() => runSync(summarize(db, by, f, now)));
    const counted = runs[0][0];
    const byKey = (rows: typeof scan) => JSON.stringify([...rows].sort((a, b) => a.key.localeCompare(b.key)));
    const same = byKey(counted) === byKey(scan);
    if (!same) console.log(byKey(counted).slice(0, 600), '\n', byKey(scan).slice(0, 600));
    const ms = runs.map((r) => r[1].toFixed(1)).join(' / ');
    console.log(`  ${name}: counters ${ms} ms, scan ${scanMs.toFixed(0)} ms, ${counted.length} groups, equal: ${same}`);
  }
  // The delivery loop's writes through the triggers: claims of due recipients (100 at a time), then their
  // settlement; again without migration 014's slot trigger, and without its lease index (013's cost).
  const claims = Math.min(10_000, n / 30);
  const cycle = (label: string) => {
    const claimed: number[] = [];
    const [, claimMs] = time(() => {
      for (let i = 0; i < claims; i += 100)
        tx(db, () => claimed.push(...runSync(claimDue(db, now, now + 300e3, 100)).map((c) => c.id)));
    });
    const [, settleMs] = time(() => tx(db, () => claimed.forEach((id) => runSync(settleClaim(db, id)))));
    const each = (ms: number) => ((ms * 1000) / claimed.length).toFixed(1);
    console.log(`  ${claimed.length} claims ${label}: ${each(claimMs)} µs each, settle ${each(settleMs)} µs each`);
  };
  cycle('with the slot trigger and the lease index');
  db.exec('DROP TRIGGER queue_slots_update');
  cycle('without the slot trigger');
  db.exec('DROP INDEX deliveries_leased');
  cycle('without either (as with 013)');
  // Submissions: 200 more emails of 50 waiting recipients with the slot trigger, then 200 without it.
  const next = (delivered + waitingEmails) * 2;
  const insert = (label: string, from: number) => {
    const [, ms] = time(() => fill(db, from, from + 200, 'queued', now));
    console.log(`  10,000 waiting recipients inserted ${label}: ${((ms * 1000) / 10_000).toFixed(1)} µs each`);
  };
  insert('with both counter triggers', next);
  db.exec('DROP TRIGGER queue_slots_insert');
  insert('without the slot trigger (as with 013)', next + 200);
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

export function benchSummary(): void {
  const sizes = (process.env.BENCH_SUMMARY_SIZES ?? '20,20000').split(',').map(Number);
  for (const emails of sizes) run(emails);
}
