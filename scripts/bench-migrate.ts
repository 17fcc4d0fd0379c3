// `node --import tsx scripts/bench-migrate.ts [EMAILS]` (default 100000): `mta migrate-to-postgres` of a SQLite store
// holding EMAILS live emails (2 recipients each, half delivered, a quarter deferred, a quarter queued; 3 events each,
// a tag on every other one, ~600-byte bodies) into a fresh database on a throwaway PostgreSQL cluster (fsync on).
// Prints the command's output (rows per table, total, rows/s), its wall time and the machine load.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDb, tx, type DB } from '../src/store/db.js';
import { insertEmail, type NewEmail } from '../src/store/emails.js';
import { appendEvent } from '../src/store/events.js';
import { runSync } from '../src/store/op.js';
import { insertTeam } from '../src/store/teams.js';
import { createDatabase, sharedPg, stopSharedPg } from '../test/helpers/pg.js';

const N = Number(process.argv[2] ?? 100_000);
const BODY = 'Thanks for your order. '.repeat(26);
const BIN = path.resolve('bin/mta.js');

function email(i: number, now: number, status: string): NewEmail {
  return {
    id: `em_bench${String(i).padStart(8, '0')}`,
    team_id: `team_${i % 10}`,
    test_mode: 0,
    status: status as NewEmail['status'],
    from_addr: 'Acme <orders@sender.test>',
    to_json: JSON.stringify([`a${i}@d${i % 50}.test`, `b${i}@d${(i + 1) % 50}.test`]),
    cc_json: null,
    bcc_json: null,
    reply_to: null,
    subject: `Your order #${i}`,
    html: `<p>${BODY}</p>`,
    text: BODY,
    tags_json: i % 2 ? '["receipt"]' : null,
    headers_json: null,
    tracking_opens: 0,
    tracking_clicks: 0,
    scheduled_at: null,
    credits_charged: 2,
    sender_domain: 'sender.test',
    created_at: now - N + i,
    updated_at: now,
    attachments_json: null,
    raw_message: 0,
  };
}

function fill(db: DB, now: number): void {
  tx(db, () => {
    for (let t = 0; t < 10; t++) runSync(insertTeam(db, { id: `team_${t}`, name: `team ${t}`, created_at: now }));
  });
  for (let i = 0; i < N; i += 1000)
    tx(db, () => {
      for (let j = i; j < Math.min(N, i + 1000); j++) {
        const status = j % 2 ? 'delivered' : j % 4 === 0 ? 'delivery_delayed' : 'queued';
        const e = email(j, now, status);
        const rcpts = (JSON.parse(e.to_json) as string[]).map((r) => ({
          recipient: r,
          kind: 'to' as const,
          domain: r.split('@')[1],
          status: e.status,
          next_attempt_at: status === 'delivered' ? null : now + (j % 3600) * 1000,
        }));
        const seq = runSync(insertEmail(db, e, j % 2 ? ['receipt'] : [], rcpts));
        for (const [k, type] of (['queued', 'sent', status] as const).entries())
          runSync(
            appendEvent(db, {
              id: `ev_bench${j}_${k}`,
              team_id: e.team_id,
              email_seq: seq,
              type: type as 'queued',
              recipient: k ? rcpts[0].recipient : null,
              data_json: '{"reply":"250 2.0.0 Ok"}',
              created_at: e.created_at + k,
            }),
          );
      }
    });
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mta-bench-migrate-'));
try {
  const t0 = Date.now();
  const db = openDb(dataDir, { synchronous: 'NORMAL' });
  fill(db, Date.now());
  db.close();
  console.log(`SQLite store with ${N} emails built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const url = await createDatabase((await sharedPg()).url);
  const t1 = Date.now();
  const out = execFileSync(
    process.execPath,
    [BIN, 'migrate-to-postgres', '--to', url, '--batch', process.env.BATCH ?? '1000'],
    {
      env: { PATH: process.env.PATH!, MTA_DATA_DIR: dataDir },
      encoding: 'utf8',
    },
  );
  const wall = (Date.now() - t1) / 1000;
  console.log(out.trim());
  console.log(`wall time of the command (incl. start and migrations): ${wall.toFixed(1)} s`);
  console.log(
    `load: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (${os.cpus().length} cores)`,
  );
} finally {
  await stopSharedPg();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
