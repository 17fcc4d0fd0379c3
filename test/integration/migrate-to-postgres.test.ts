// `mta migrate-to-postgres` (issue 15): a SQLite store built through the real service (teams, keys, a verified DKIM
// domain and one added through the API, credits, live emails delivered, bounced, deferred and held at a loopback MX, a
// scheduled one, an attachment, webhook endpoints and deliveries, suppressions, events) is copied by the CLI, run as
// a child process, into an empty PostgreSQL database. Then: every table holds exactly SQLite's rows (generic compare),
// the queue counters equal a recount, the service started on PostgreSQL shows the same emails, events, keys (the old
// key still authenticates), domains (same DKIM keys), suppressions, webhooks and credits, and new rows get ids after
// the copied ones (the triggers are on again). A second run refuses (not empty) and changes nothing; a schema at
// another migration set is refused; a copy that fails midway leaves the database empty (one transaction).
// Skipped when no PostgreSQL is installed (apt-get install postgresql).
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { startTestService, tempDir, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { mta } from '../helpers/cli.js';
import { createDatabase, pgBinDir, sharedPg } from '../helpers/pg.js';
import { Receiver } from './webhooks-receiver.js';
import { route, sleep } from './outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as domains } from '../../src/features/domains.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { openDb, type DB } from '../../src/store/db.js';
import { parseFilter, queueAction } from '../../src/services/queue.js';

const SCOPES = ['emails:send', 'emails:read', 'domains:read', 'domains:write', 'webhooks:write', 'keys:write'] as const;
const WAITING = "('queued', 'sent', 'delivery_delayed')";

/** Every row of every table (schema_migrations aside), sorted, BLOBs as hex: the same on both engines after a copy. */
function dump(db: DB | Database.Database, tables: string[], rowidTables: Set<string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const t of tables) {
    const cols = rowidTables.has(t) ? 'rowid AS rowid, *' : '*';
    const rows = (db.prepare(`SELECT ${cols} FROM ${t}`).all() as Record<string, unknown>[]).map((r) =>
      JSON.stringify(
        Object.keys(r)
          .sort()
          .map((k) => {
            const v = r[k];
            return [k, Buffer.isBuffer(v) ? v.toString('hex') : typeof v === 'bigint' ? Number(v) : v];
          }),
      ),
    );
    out[t] = rows.sort();
  }
  return out;
}

const recountSql = {
  counts: `SELECT e.team_id, d.domain, e.sender_domain, count(*) AS recipients,
      sum(CASE WHEN d.held_at IS NOT NULL THEN 1 ELSE 0 END) AS held,
      sum(CASE WHEN d.held_at IS NULL AND d.attempts > 0 THEN 1 ELSE 0 END) AS deferred
    FROM deliveries d JOIN emails e ON e.seq = d.email_seq WHERE d.status IN ${WAITING}
    GROUP BY e.team_id, d.domain, e.sender_domain ORDER BY 1, 2, 3`,
  // migration 014: the waiting recipients neither held nor leased, by minute of the next attempt
  slots: `SELECT coalesce(d.next_attempt_at, 0) / 60000 AS slot, e.team_id, d.domain, e.sender_domain,
      CASE WHEN d.attempts > 0 THEN 1 ELSE 0 END AS attempted, count(*) AS recipients
    FROM deliveries d JOIN emails e ON e.seq = d.email_seq
    WHERE d.status IN ${WAITING} AND d.held_at IS NULL AND d.leased_until IS NULL
    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`,
};
const num = (rows: unknown[]) =>
  rows.map((r) =>
    Object.fromEntries(Object.entries(r as object).map(([k, v]) => [k, typeof v === 'string' ? v : Number(v)])),
  );
function counters(db: DB) {
  return {
    counts: num(
      db
        .prepare('SELECT team_id, domain, sender_domain, recipients, held, deferred FROM queue_counts ORDER BY 1, 2, 3')
        .all(),
    ),
    slots: num(
      db
        .prepare(
          'SELECT slot, team_id, domain, sender_domain, attempted, recipients FROM queue_slots ORDER BY 1, 2, 3, 4, 5',
        )
        .all(),
    ),
  };
}
const recount = (db: DB) => ({
  counts: num(db.prepare(recountSql.counts).all()),
  slots: num(db.prepare(recountSql.slots).all()),
});

function tableCounts(db: DB, tables: string[]): Record<string, number> {
  return Object.fromEntries(
    tables.map((t) => [t, Number((db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n)]),
  );
}

/** What the API shows of one team: emails with their events, domains, keys, suppressions, webhooks, credits. */
async function snapshot(s: TestService, key: string) {
  const get = async (p: string) => {
    const r = await s.api('GET', p, { key });
    expect(r.status, `${p}: ${JSON.stringify(r.body)}`).to.equal(200);
    return r.body;
  };
  const emails = (await get('/v1/emails?limit=100')).data as { id: string }[];
  const events: Record<string, unknown> = {};
  for (const e of emails) events[e.id] = (await get(`/v1/emails/${e.id}/events?limit=100`)).data;
  const doms = (await get('/v1/domains')).data as { id: string }[];
  const domainDetails = [];
  for (const d of doms) domainDetails.push(await get(`/v1/domains/${d.id}`));
  const keys = ((await get('/v1/api-keys')).data as Record<string, unknown>[]).map(({ last_used_at: _, ...k }) => k);
  return {
    emails,
    events,
    domains: domainDetails,
    keys,
    suppressions: await get('/v1/suppressions'),
    webhooks: await get('/v1/webhooks'),
    credits: await get('/v1/credits'),
  };
}

describe('mta migrate-to-postgres: a SQLite store copied into an empty PostgreSQL database', function () {
  this.timeout(180_000);
  let dns: TestDns | undefined, mx: TestMx | undefined, hooks: Receiver | undefined;
  let s: TestService | undefined;
  const dbs: DB[] = [];

  before(async function () {
    if (!pgBinDir() && !process.env.MTA_TEST_PG_URL) {
      console.log(
        '    (skipped: no PostgreSQL in /usr/lib/postgresql/*/bin; `apt-get install postgresql` to run these)',
      );
      this.skip();
    }
  });
  after(async () => {
    await s?.close();
    for (const db of dbs) db.close();
    await hooks?.stop();
    await mx?.stop();
    await dns?.stop();
  });
  const open = (url: string, dataDir: string) => {
    const db = openDb(dataDir, { databaseUrl: url });
    dbs.push(db);
    return db;
  };

  it('copies everything, the service runs on it, a second run refuses and changes nothing', async () => {
    const cluster = await sharedPg();
    // 1. The SQLite store, through the real service (SQLite whatever MTA_TEST_ENGINE says: '' unsets the URL).
    dns = await new TestDns().start();
    mx = await new TestMx({
      script: {
        rcpt: (to) => {
          const domain = to.split('@')[1];
          if (domain === 'bounce.test') return { code: 550, message: '5.1.1 No such user' };
          if (domain === 'defer.test' || domain === 'held.test') return { code: 451, message: '4.7.1 Try again later' };
          return undefined;
        },
      },
    }).start();
    hooks = await new Receiver().start();
    for (const d of ['rcpt.test', 'bounce.test', 'defer.test', 'held.test']) route(dns, d);
    const dataDir = tempDir('mta-migrate-');
    const env = {
      MTA_DNS_SERVERS: dns.server,
      MTA_OUTBOUND_PORT: String(mx.port),
      MTA_OUTBOUND_TIMEOUT_SECONDS: '1',
      MTA_RETRY_MIN_SECONDS: '600', // a deferred recipient stays deferred for the whole test
      MTA_RETRY_MAX_SECONDS: '900',
      MTA_RATE_LIMIT: '0',
    };
    s = await startTestService({
      dataDir,
      features: [domains, webhooks, outbound],
      env: { ...env, MTA_DATABASE_URL: '' },
    });
    const team = s.team('acme');
    const other = s.team('other');
    const key = s.key(team.id, 'live', [...SCOPES]);
    const testKey = s.key(team.id, 'test', ['emails:send', 'emails:read']);
    s.key(other.id, 'live');
    s.credits(team.id, 500);
    s.credits(other.id, 7);
    const dom = insertVerifiedDomain(s.db, team.id, 'sender.test');
    dns.set(`${dom.selector}._domainkey.sender.test`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
    const added = await s.api('POST', '/v1/domains', { key, body: { name: 'pending.test' } });
    expect(added.status, JSON.stringify(added.body)).to.equal(201);
    const rotated = await s.api('POST', `/v1/domains/${dom.id}/rotate-dkim`, { key }); // a `next` key in dkim_keys
    expect(rotated.status, JSON.stringify(rotated.body)).to.be.oneOf([200, 201, 202]);
    const hook = await s.api('POST', '/v1/webhooks', {
      key,
      body: { url: hooks.url, events: ['delivered', 'bounced'] },
    });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
    for (const address of ['gone@rcpt.test', 'complainer@rcpt.test']) {
      const r = await s.api('POST', '/v1/suppressions', { key, body: { address } });
      expect(r.status, JSON.stringify(r.body)).to.be.oneOf([200, 201]);
    }
    const send = async (body: Record<string, unknown>, k = key) => {
      const r = await s!.api('POST', '/v1/emails', {
        key: k,
        body: { from: 'Acme <app@sender.test>', subject: 'Hello', text: 'x', ...body },
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      return r.body.id as string;
    };
    const ids = {
      delivered: await send({
        to: ['ann@rcpt.test', 'bob@rcpt.test'],
        tags: ['receipt'],
        attachments: [{ filename: 'a.bin', content: Buffer.from([0, 1, 2, 255, 254]).toString('base64') }],
      }),
      bounced: await send({ to: ['nobody@bounce.test'] }),
      deferred: await send({ to: ['later@defer.test'] }),
      held: await send({ to: ['x@held.test', 'y@held.test'] }),
      scheduled: await send({ to: ['ann@rcpt.test'], scheduled_at: new Date(Date.now() + 86_400_000).toISOString() }),
      test: await send({ to: ['t@rcpt.test'] }, testKey),
    };
    const status = async (id: string) => (await s!.api('GET', `/v1/emails/${id}`, { key })).body.status;
    const until = Date.now() + 15_000;
    const want = { delivered: 'delivered', bounced: 'bounced', deferred: 'delivery_delayed', held: 'delivery_delayed' };
    for (const [k, st] of Object.entries(want))
      while ((await status(ids[k as keyof typeof ids])) !== st && Date.now() < until) await sleep(50);
    for (const [k, st] of Object.entries(want)) expect(await status(ids[k as keyof typeof ids]), k).to.equal(st);
    expect(await queueAction(s.ctx, 'hold', await parseFilter(s.ctx, { domain: 'held.test' }), {})).to.deep.equal({
      matched: 2,
    });
    while (hooks.got.length < 2 && Date.now() < until) await sleep(50); // delivered + bounced webhooks
    const before = await snapshot(s, key);
    expect(before.emails).to.have.length(6);
    await s.close();
    s = undefined;

    // 2. The copy, by the CLI as a child process.
    const url = await createDatabase(cluster.url);
    const r = await mta(['migrate-to-postgres', '--to', url, '--batch', '3'], { MTA_DATA_DIR: dataDir });
    expect(r.code, r.stderr).to.equal(0);
    const lines = r.stdout.trim().split('\n');
    const perTable = Object.fromEntries(
      lines.slice(0, -1).map((l) => {
        const [t, n] = l.split(' ');
        return [t, Number(n)];
      }),
    );
    expect(lines.at(-1)).to.match(/^total \d+ \(\d+\.\d s, \d+ rows\/s\)$/);
    const total = Number(/^total (\d+)/.exec(lines.at(-1)!)![1]);
    expect(total).to.equal(Object.values(perTable).reduce((a, b) => a + b, 0));
    // Parents before children.
    const order = Object.keys(perTable);
    for (const [child, parent] of [
      ['api_keys', 'teams'],
      ['emails', 'teams'],
      ['deliveries', 'emails'],
      ['events', 'emails'],
      ['dkim_keys', 'domains'],
    ])
      expect(order.indexOf(child), `${child} after ${parent}`).to.be.greaterThan(order.indexOf(parent));
    expect(order).to.not.include('schema_migrations');

    // Every table holds SQLite's rows exactly (domains and credit_grants: SQLite's rowid in the rowid column).
    const lite = new Database(path.join(dataDir, 'mta.sqlite'), { readonly: true });
    const tables = (
      lite
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name",
        )
        .pluck()
        .all() as string[]
    ).sort();
    expect(Object.keys(perTable).sort()).to.deep.equal(tables);
    const rowidTables = new Set(['domains', 'credit_grants']);
    const pgdb = open(url, dataDir);
    const liteDump = dump(lite, tables, rowidTables);
    lite.close();
    const pgDump = dump(pgdb, tables, rowidTables);
    for (const t of tables) {
      expect(
        pgDump[t],
        `${t}: ${JSON.stringify(pgDump[t]).slice(0, 600)} vs ${JSON.stringify(liteDump[t]).slice(0, 600)}`,
      ).to.deep.equal(liteDump[t]);
      expect(perTable[t], t).to.equal(liteDump[t].length);
    }
    for (const t of [
      'teams',
      'api_keys',
      'domains',
      'dkim_keys',
      'emails',
      'deliveries',
      'events',
      'email_attachments',
    ])
      expect(perTable[t], t).to.be.greaterThan(0);
    // The queue counters equal a recount (and there is something to count).
    const c0 = counters(pgdb);
    expect(c0.counts.length).to.be.greaterThan(0);
    expect(c0.slots.length).to.be.greaterThan(0);
    expect(c0).to.deep.equal(recount(pgdb));

    // 3. The service on PostgreSQL shows the same.
    s = await startTestService({ dataDir, features: [domains, webhooks], env: { ...env, MTA_DATABASE_URL: url } });
    const after = await snapshot(s, key);
    expect(after).to.deep.equal(before);
    expect((await s.api('GET', `/v1/emails/${ids.test}`, { key: testKey })).status).to.equal(200);
    expect(
      after.domains.find((d: { name: string }) => d.name === 'sender.test'),
      'the DKIM key is the same',
    ).to.deep.include({ id: dom.id });
    const dkim = pgdb.prepare('SELECT dkim_private_key FROM domains WHERE id = ?').get(dom.id) as {
      dkim_private_key: string;
    };
    expect(dkim.dkim_private_key).to.equal(dom.privateKey);
    // New rows come after the copied ones, and the triggers count them.
    const maxSeq = Number((pgdb.prepare('SELECT max(seq) AS m FROM emails').get() as { m: number }).m);
    const newId = await send({ to: ['new@defer.test'] });
    const seq = Number((pgdb.prepare('SELECT seq FROM emails WHERE id = ?').get(newId) as { seq: number }).seq);
    expect(seq).to.be.greaterThan(maxSeq);
    expect((await s.api('GET', '/v1/emails?limit=1', { key })).body.data[0].id).to.equal(newId);
    const d2 = await s.api('POST', '/v1/domains', { key, body: { name: 'second.test' } });
    expect(d2.status, JSON.stringify(d2.body)).to.equal(201);
    const list = (await s.api('GET', '/v1/domains', { key })).body.data.map((d: { name: string }) => d.name);
    expect(list).to.have.members(['sender.test', 'pending.test', 'second.test']);
    const c1 = counters(pgdb);
    expect(c1).to.deep.equal(recount(pgdb));
    expect(c1).to.not.deep.equal(c0);
    await s.close();
    s = undefined;

    // 4. A second run refuses: the database is not empty; nothing changes.
    const all = Object.keys(perTable);
    const counts = tableCounts(pgdb, all);
    const again = await mta(['migrate-to-postgres'], { MTA_DATA_DIR: dataDir, MTA_DATABASE_URL: url });
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/is not empty \(rows in .*teams/);
    expect(again.stdout).to.equal('');
    expect(tableCounts(pgdb, all)).to.deep.equal(counts);
  });

  it('refuses a SQLite store at another migration set, and a copy failing midway leaves the database empty', async () => {
    const cluster = await sharedPg();
    const dataDir = tempDir('mta-migrate-src-');
    // A small store, built by the service.
    s = await startTestService({ dataDir, features: [], env: { MTA_DATABASE_URL: '' } });
    const team = s.team('t1');
    s.key(team.id, 'test');
    const k = s.key(team.id, 'test', ['emails:send']);
    for (let i = 0; i < 5; i++) {
      const r = await s.api('POST', '/v1/emails', {
        key: k,
        body: { from: 'a@x.test', to: ['b@y.test'], subject: 's', text: 'x' },
      });
      expect(r.status).to.equal(202);
    }
    await s.close();
    s = undefined;
    const variant = (change: string) => {
      const dir = tempDir('mta-migrate-variant-');
      const src = new Database(path.join(dataDir, 'mta.sqlite'), { readonly: true });
      src.exec(`VACUUM INTO '${path.join(dir, 'mta.sqlite')}'`);
      src.close();
      const w = new Database(path.join(dir, 'mta.sqlite'));
      w.exec(change);
      w.close();
      return dir;
    };
    const empty = async (url: string) => {
      const db = open(url, dataDir);
      return tableCounts(db, ['teams', 'api_keys', 'emails', 'settings']);
    };
    const zero = { teams: 0, api_keys: 0, emails: 0, settings: 0 };

    const old = variant('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)');
    const url1 = await createDatabase(cluster.url);
    const r1 = await mta(['migrate-to-postgres', '--to', url1], { MTA_DATA_DIR: old });
    expect(r1.code).to.equal(1);
    expect(r1.stderr).to.match(/SQLite store is at migrations 1-\d+, PostgreSQL at 1-\d+: start this version/);
    expect(await empty(url1)).to.deep.equal(zero);

    // The last email can't go into a BIGINT column: the copy fails at emails, after teams and keys went in.
    const bad = variant("UPDATE emails SET created_at = 'not a time' WHERE seq = (SELECT max(seq) FROM emails)");
    const url2 = await createDatabase(cluster.url);
    const r2 = await mta(['migrate-to-postgres', '--to', url2, '--batch', '2'], { MTA_DATA_DIR: bad });
    expect(r2.code).to.equal(1);
    expect(r2.stderr).to.match(/copying emails: /);
    expect(r2.stdout).to.match(/^teams 1$/m);
    expect(await empty(url2)).to.deep.equal(zero);

    // No store at all.
    const none = tempDir('mta-migrate-none-');
    const r3 = await mta(['migrate-to-postgres', '--to', url2], { MTA_DATA_DIR: none });
    expect(r3.code).to.equal(1);
    expect(r3.stderr).to.match(/no SQLite store in/);
    expect(fs.existsSync(path.join(none, 'mta.sqlite'))).to.equal(false);
  });
});
