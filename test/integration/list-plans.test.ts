// GET /v1/emails with every combination of filters a key can send (mode: a test key's, a live key's test_mode=true or
// false, or both; each status, none included; a tag; a search; a cursor), planned over a team of many skewed emails
// (test/helpers/email-fill.ts: 99% delivered, none bounced, 0.1% test mode; PostgreSQL analyzed): each is one range of
// the index migration 024 meant for it, read in seq order, never a walk over rows of another mode or status.
// LIST_PLANS_ROWS sets the rows (default 200,000: what fills in a few seconds here; SQLite has no statistics, so its
// plans do not depend on the count, and PostgreSQL's ANALYZE samples 30,000 rows whatever it is, so the skew, not the
// size, is what it sees; the session ran it once with 10^6 on both engines).
import { expect } from 'chai';
import { startTestService, testEngine, type TestService } from '../helpers/service.js';
import { fillEmails } from '../helpers/email-fill.js';
import { planOf } from '../helpers/plans.js';
import { listEmails, listEmailsQuery, SEARCH_WINDOW, type EmailFilter } from '../../src/store/emails.js';
import { runSync } from '../../src/store/op.js';
import { STATUSES } from '../../src/core/status.js';

const ROWS = Number(process.env.LIST_PLANS_ROWS ?? 200_000);

/** The index each combination should read (both modes without a status, or with a tag: one range per mode). */
function intended(f: EmailFilter): string {
  if (f.tag !== undefined) return f.status === undefined ? 'PRIMARY KEY' : 'COVERING INDEX email_tags_status';
  if (f.testMode === undefined) return f.status === undefined ? 'emails_team_mode' : 'emails_team_status';
  return f.status === undefined ? 'emails_team_mode' : 'emails_team_mode_status';
}

/** SQLite: the plan line that reads the intended range, with every filter of the key in it. */
function readsRange(f: EmailFilter, index: string): string {
  const mode = f.testMode !== undefined || f.tag !== undefined || f.status === undefined;
  const cols = [
    'team_id=?',
    ...(f.tag === undefined ? [] : ['tag=?']),
    ...(mode ? ['test_mode=?'] : []),
    ...(f.status === undefined ? [] : ['status=?']),
  ];
  const table = f.tag === undefined ? 'e' : 't';
  const how = index === 'PRIMARY KEY' ? 'PRIMARY KEY' : index.startsWith('COVERING') ? index : `INDEX ${index}`;
  return `SEARCH ${table} USING ${how} (${cols.join(' AND ')}`;
}

/** Every filter combination a key can send, as the service hands them to the store (services/emails.ts). */
function combinations(deep: number): { f: EmailFilter; before: number | null }[] {
  const out: { f: EmailFilter; before: number | null }[] = [];
  for (const testMode of [undefined, true, false])
    for (const status of [undefined, ...STATUSES])
      for (const tag of [undefined, 'news'])
        for (const q of [undefined, 'nobody'])
          for (const before of [null, deep]) out.push({ f: { testMode, status, tag, q }, before });
  return out;
}

describe('list query plans at many emails (migration 024)', function () {
  this.timeout(300_000);
  let s: TestService;
  let teamId: string;
  let deep: number;
  before(async () => {
    s = await startTestService({ env: { MTA_RATE_LIMIT: '0' } });
    teamId = s.team().id;
    fillEmails(s.db, teamId, ROWS);
    deep = Number(s.db.prepare('SELECT min(seq) FROM emails').pluck().get()) + 1000;
  });
  after(() => s?.close());

  /**
   * The plan of one combination: SQLite's EXPLAIN QUERY PLAN lines; PostgreSQL's EXPLAIN ANALYZE lines (run: the rows
   * its filters removed are counted, whatever index its statistics made it choose).
   */
  function planFor(f: EmailFilter, before: number | null): string[] {
    const { text, params } = listEmailsQuery(teamId, f, before, 20);
    if (testEngine() !== 'pg') return planOf(s.db, text);
    const explain = 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)';
    return s.db.prepare(`${explain} ${text}`).pluck().all(params) as string[];
  }

  /**
   * PostgreSQL chooses by its statistics: the intended index, or another whose filter its statistics say removes
   * almost nothing (the primary key backward when 99% of the team's rows match). Either way a page reads about its
   * own rows: no sequential or bitmap scan, no sort of a range, and at most 100 rows removed by filters.
   */
  function pgReadsItsPage(plan: string[]): boolean {
    const removed = plan.reduce((n, l) => n + Number(/Rows Removed by Filter: (\d+)/.exec(l)?.[1] ?? 0), 0);
    return removed <= 100 && !plan.some((l) => /Seq Scan|Bitmap|^\s*(->\s*)?(Incremental )?Sort \(/.test(l));
  }

  it('reads, for each combination without a search, a range of its index with every filter in the key', () => {
    const bad: string[] = [];
    for (const { f, before } of combinations(deep).filter((c) => c.f.q === undefined)) {
      const plan = planFor(f, before);
      const index = intended(f);
      const lines = plan.filter((l) => /emails|SCAN|Scan|Sort|Filter|SEARCH/.test(l));
      const ok =
        testEngine() === 'pg'
          ? pgReadsItsPage(plan)
          : lines.every(
              (l) =>
                l.startsWith(readsRange(f, index)) ||
                (f.tag !== undefined && l === 'SEARCH e USING INTEGER PRIMARY KEY (rowid=?)') ||
                /^(MERGE \(UNION ALL\)|LEFT|RIGHT|CO-ROUTINE (live|test)|SCAN (live|test)|USE TEMP B-TREE FOR ORDER BY)$/.test(
                  l,
                ),
            ) && lines.some((l) => l.startsWith(readsRange(f, index)));
      if (!ok) bad.push(`${JSON.stringify(f)} before=${before}: wanted ${index}\n  ${plan.join('\n  ')}`);
    }
    expect(bad, bad.join('\n')).to.deep.equal([]);
  });

  it('searches (q) a window of SEARCH_WINDOW emails of the range the other filters read, in every combination', () => {
    const bad: string[] = [];
    for (const { f, before } of combinations(deep).filter((c) => c.f.q !== undefined)) {
      const { window, params } = listEmailsQuery(teamId, f, before, 20);
      const plan =
        testEngine() === 'pg'
          ? (s.db
              .prepare(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${window}`)
              .pluck()
              .all(params) as string[])
          : planOf(s.db, window!);
      const index = intended(f).replace('COVERING INDEX ', '');
      // PostgreSQL may read a short range (≤ 100 rows here) by bitmap and sort it: still its own rows only.
      const removed = plan.reduce((n, l) => n + Number(/Rows Removed by Filter: (\d+)/.exec(l)?.[1] ?? 0), 0);
      const ok =
        testEngine() === 'pg'
          ? removed <= 100 && !plan.some((l) => /Seq Scan/.test(l))
          : plan.some((l) => l.startsWith('SEARCH') && l.includes(index)) &&
            !plan.some((l) => /^SCAN (e|t|emails|email_tags)\b/.test(l));
      // Nothing matches `nobody`: the page is empty and says where its window ended, unless the range is shorter.
      const { rows, searchedTo } = runSync(listEmails(s.db, teamId, f, before, 20));
      const inRange = runSync(listEmails(s.db, teamId, { ...f, q: undefined }, before, SEARCH_WINDOW)).rows.length;
      const full = inRange >= SEARCH_WINDOW;
      if (!ok || rows.length !== 0 || (searchedTo !== null) !== full)
        bad.push(
          `${JSON.stringify(f)} before=${before}: rows ${rows.length}, searchedTo ${searchedTo}, range ${inRange}\n  ${plan.join('\n  ')}`,
        );
    }
    expect(bad, bad.join('\n')).to.deep.equal([]);
  });

  it('pages a search through the API window by window: every match once, short pages saying has_more', async () => {
    const key = s.key(teamId, 'live', ['emails:read']);
    const seen: string[] = [];
    let pages = 0;
    let short = 0;
    for (let cursor = ''; ; pages++) {
      const r = await s.api('GET', `/v1/emails?q=user70@&tag=news&test_mode=false&limit=100${cursor}`, { key });
      expect(r.status).to.equal(200);
      seen.push(...r.body.data.map((e: { id: string }) => e.id));
      if (r.body.has_more && r.body.data.length < 100) short++;
      if (!r.body.has_more) break;
      cursor = `&cursor=${r.body.next_cursor}`;
    }
    const want = s.db
      .prepare(
        `SELECT count(*) FROM emails e JOIN email_tags t ON t.email_seq = e.seq AND t.tag = 'news'
         WHERE e.team_id = ? AND e.test_mode = 0 AND e.to_json LIKE '%user70@%'`,
      )
      .pluck()
      .get(teamId);
    expect(new Set(seen).size, 'no email twice').to.equal(seen.length);
    expect(seen.length).to.equal(Number(want));
    expect(short, 'pages cut by the window').to.be.greaterThan(0);
    expect(pages, 'one window a page (every 10th email is tagged)').to.be.at.least(
      Math.floor(ROWS / 10 / SEARCH_WINDOW),
    );
  });
});
