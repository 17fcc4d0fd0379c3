// `npm run bench -- summary`: `mta queue summary` over 10^6 synthetic waiting recipients (20,000 emails of 50,
// 10 teams, 50 domains, plus 500,000 delivered) in a fresh store: the counters (no filter) against the row scan.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb, tx, type DB } from '../src/store/db.js';
import { insertEmail, type NewEmail } from '../src/store/emails.js';
import { insertTeam } from '../src/store/teams.js';
import { summarize } from '../src/store/queue-admin.js';
import { summarizeFromCounts } from '../src/store/queue-counts.js';

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
    sender_domain: 'sender.test',
    created_at: now - 3600e3 + i,
    updated_at: now,
    attachments_json: null,
    raw_message: 0,
  };
}

/** Emails i in [from, to): delivered ones first (as older mail), then waiting ones, some deferred or held. */
function fill(db: DB, from: number, to: number, status: 'queued' | 'delivered', now: number): void {
  for (let i = from; i < to; i += 1000)
    tx(db, () => {
      for (let j = i; j < Math.min(to, i + 1000); j++) {
        const e = { ...email(j % TEAMS, j, now), status };
        const rcpts = Array.from({ length: PER_EMAIL }, (_, k) => {
          const domain = `d${(j + k) % DOMAINS}.test`;
          return { recipient: `r${k}@${domain}`, kind: 'to' as const, domain, status, next_attempt_at: null };
        });
        insertEmail(db, e, [], rcpts);
      }
    });
}

const time = <T>(fn: () => T): [T, number] => {
  const t = performance.now();
  const r = fn();
  return [r, performance.now() - t];
};

export function benchSummary(): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mta-summary-'));
  const db = openDb(dir);
  const now = Date.now();
  for (let t = 0; t < TEAMS; t++) insertTeam(db, { id: `team_${t}`, name: `team${t}`, created_at: now });
  const [, filled] = time(() => {
    fill(db, 0, 10_000, 'delivered', now);
    fill(db, 10_000, 30_000, 'queued', now);
  });
  db.exec("UPDATE deliveries SET attempts = 1, status = 'delivery_delayed' WHERE id % 3 = 0 AND status = 'queued'");
  db.exec("UPDATE deliveries SET held_at = 1 WHERE id % 10 = 0 AND status IN ('queued', 'delivery_delayed')");
  console.log(`summary: ${filled.toFixed(0)} ms to write 1.5 x 10^6 recipients (triggers included)`);
  for (const by of ['domain', 'team'] as const) {
    const runs = [0, 1, 2, 3, 4].map(() => time(() => summarizeFromCounts(db, by)));
    const [scan, scanMs] = time(() => summarize(db, by, {}, now));
    const counted = runs[0][0];
    const byKey = (rows: typeof scan) => JSON.stringify([...rows].sort((a, b) => a.key.localeCompare(b.key)));
    const same = byKey(counted) === byKey(scan);
    if (!same) console.log(byKey(counted).slice(0, 300), '\n', byKey(scan).slice(0, 300));
    const ms = runs.map((r) => r[1].toFixed(1)).join(' / ');
    console.log(
      `summary by ${by}: counters ${ms} ms, scan ${scanMs.toFixed(0)} ms, ${counted.length} groups, equal: ${same}`,
    );
  }
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
