// Server CPU of a turn's INSERTs: 16 emails + 16 deliveries (one multi-row INSERT each) per transaction, row vs statement trigger.
import pg from 'pg';
import fs from 'node:fs';
import { openPg } from '/work/main/src/store/db.ts';
const base = process.argv[2];
const variant = process.argv[3] === "stmt2" ? "stmt" : process.argv[3]; // row | stmt
const leased = process.argv[4] === 'leased';
const admin = new pg.Client({ connectionString: base }); await admin.connect();
const name = `trig_${variant}_${Date.now()}`;
await admin.query(`CREATE DATABASE ${name}`);
const url = base.replace(/\/[^/]*$/, `/${name}`);
openPg(url).close();
const c = new pg.Client({ connectionString: url }); await c.connect();
if (variant === 'stmt2') {
  await c.query(`CREATE OR REPLACE FUNCTION deliveries_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_counts_delta (team_id, domain, sender_domain, recipients, held, deferred)
  SELECT k.team_id, k.domain, k.sender_domain, count(*), count(*) FILTER (WHERE k.held_at IS NOT NULL),
    count(*) FILTER (WHERE k.held_at IS NULL AND k.attempts > 0)
  FROM (SELECT n.domain, n.held_at, n.attempts, e.team_id, e.sender_domain FROM inserted n
    CROSS JOIN LATERAL (SELECT e.team_id, e.sender_domain FROM emails e WHERE e.seq = n.email_seq OFFSET 0) e
    WHERE n.status IN ('queued', 'sent', 'delivery_delayed')) k
  GROUP BY k.team_id, k.domain, k.sender_domain;
  IF EXISTS (SELECT 1 FROM inserted n WHERE n.status IN ('queued', 'sent', 'delivery_delayed') AND n.held_at IS NULL AND n.leased_until IS NULL) THEN
  INSERT INTO queue_slots_delta (slot, team_id, domain, sender_domain, attempted, recipients)
  SELECT coalesce(n.next_attempt_at, 0) / 60000, e.team_id, n.domain, e.sender_domain, (n.attempts > 0)::int, count(*)
  FROM inserted n CROSS JOIN LATERAL (SELECT e.team_id, e.sender_domain FROM emails e WHERE e.seq = n.email_seq OFFSET 0) e
  WHERE n.status IN ('queued', 'sent', 'delivery_delayed') AND n.held_at IS NULL AND n.leased_until IS NULL
  GROUP BY 1, 2, 3, 4, 5;
  END IF;
  RETURN NULL;
END;
$$`);
}
if (variant === 'row') {
  await c.query('DROP TRIGGER deliveries_counts_insert ON deliveries');
  await c.query('DROP TRIGGER deliveries_counts ON deliveries');
  await c.query('CREATE TRIGGER deliveries_counts AFTER INSERT OR UPDATE OR DELETE ON deliveries FOR EACH ROW EXECUTE FUNCTION deliveries_counts()');
}
await c.query("INSERT INTO teams (id, name, created_at) VALUES ('t', 't', 1)");
const pid = (await c.query('SELECT pg_backend_pid() AS p')).rows[0].p;
const cpu = () => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8'); const x = f.slice(f.lastIndexOf(')') + 2).split(' '); return (Number(x[11]) + Number(x[12])) * 10; };
const N = Number(process.env.N ?? 16), TURNS = Number(process.env.TURNS ?? 1500);
const ev = [], dv = [];
for (let i = 0; i < N; i++) {
  const o = i * 12;
  ev.push(`($${o+1}, $${o+2}, 't', 1, 'queued', 'a@s.test', '[]', 's', 1, 's.test', 1, 1)`.replace(/\$\d+, /g, (m) => m));
}
let seq = 1;
const emailSql = `INSERT INTO emails (seq, id, team_id, test_mode, status, from_addr, to_json, subject, credits_charged, sender_domain, created_at, updated_at) VALUES ` +
  Array.from({ length: N }, (_, i) => `($${2*i+1}, $${2*i+2}, 't', 1, 'queued', 'a@s.test', '[]', 's', 1, 's.test', 1, 1)`).join(',');
const delSql = `INSERT INTO deliveries (email_seq, recipient, kind, domain, status, next_attempt_at, leased_until, updated_at) VALUES ` +
  Array.from({ length: N }, (_, i) => `($${i+1}, 'r@x.test', 'to', 'x.test', 'queued', 1000, ${leased ? 99999999 : 'NULL'}, 1)`).join(',');
const turn = async () => {
  const seqs = Array.from({ length: N }, () => seq++);
  await c.query('BEGIN');
  await c.query({ name: 'e', text: emailSql, values: seqs.flatMap((s) => [s, `em_${s}`]) });
  await c.query({ name: 'd', text: delSql, values: seqs });
  await c.query('COMMIT');
};
for (let i = 0; i < 100; i++) await turn();
const c0 = cpu(), t0 = Date.now();
for (let i = 0; i < TURNS; i++) await turn();
const c1 = cpu();
console.log(`${variant}${leased ? ' leased' : ''}: backend ${((c1 - c0) * 1000 / (TURNS * N)).toFixed(1)} us/email, wall ${((Date.now() - t0) * 1000 / (TURNS * N)).toFixed(1)} us/email`);
await c.end(); await admin.query(`DROP DATABASE ${name}`); await admin.end();
