// Many stored emails of one team, written with one INSERT … SELECT per block (no API, no deliveries, no events): the
// list queries' plan test and `npm run bench -- lists` fill 10^6 rows this way in seconds. The values are skewed as a
// real team's are: 99% delivered, 0.5% failed, 0.3% deferred (delivery_delayed), 0.1% canceled, none bounced or
// complained; 0.1% in test mode; every 10th tagged `news`, every 1000th `rare`; the recipient (what `q` finds) one of
// 1,000 addresses.
import { isPg, tx, type DB } from '../../src/store/db.js';

/** The status of the i-th filled email (see the header). */
const STATUS = `CASE WHEN i % 1000 < 5 THEN 'failed' WHEN i % 1000 < 8 THEN 'delivery_delayed'
  WHEN i % 1000 = 8 THEN 'canceled' ELSE 'delivered' END`;
const MODE = 'CASE WHEN i % 1000 = 9 THEN 1 ELSE 0 END';

const emailsFrom = (series: string) => `INSERT INTO emails (id, team_id, test_mode, status, from_addr, to_json, subject,
  text, tags_json, credits_charged, sender_domain, created_at, updated_at)
  SELECT 'em_fill' || @tag || i, @team, ${MODE}, ${STATUS}, 'a@sender.test', '["user' || (i % 1000) || '@example.com"]',
  'Your sign-in code', 'Your code is 123456', CASE WHEN i % 1000 = 0 THEN '["news","rare"]' WHEN i % 10 = 0 THEN '["news"]' END,
  1, 'sender.test', @at + i, @at + i FROM ${series}`;
const SERIES_SQLITE =
  '(WITH RECURSIVE s(i) AS (SELECT @lo UNION ALL SELECT i + 1 FROM s WHERE i < @hi) SELECT i FROM s)';
const SERIES_PG = 'generate_series(@lo::bigint, @hi::bigint) AS s(i)';

/**
 * Adds `n` emails to the team (after its existing ones, in seq order), in blocks of 50,000 rows; PostgreSQL:
 * ANALYZE afterwards, so the planner sees the skew. `tag` keeps the ids of several fills apart.
 */
export function fillEmails(db: DB, teamId: string, n: number, tag = 'a'): void {
  const pg = isPg(db);
  const insert = db.prepare(emailsFrom(pg ? SERIES_PG : SERIES_SQLITE));
  const tags = db.prepare(
    `INSERT INTO email_tags (team_id, tag, test_mode, status, email_seq)
     SELECT team_id, 'news', test_mode, status, seq FROM emails WHERE team_id = @team AND seq > @after AND tags_json IS NOT NULL
     UNION ALL SELECT team_id, 'rare', test_mode, status, seq FROM emails
     WHERE team_id = @team AND seq > @after AND tags_json LIKE '%rare%'`,
  );
  const after = Number(db.prepare('SELECT coalesce(max(seq), 0) FROM emails').pluck().get());
  const at = Date.now() - n;
  for (let lo = 0; lo < n; lo += 50_000)
    tx(db, () => insert.run({ tag, team: teamId, at, lo, hi: Math.min(n, lo + 50_000) - 1 }));
  tx(db, () => tags.run({ team: teamId, after }));
  if (pg) db.exec('ANALYZE emails; ANALYZE email_tags');
}
