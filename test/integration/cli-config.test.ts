// The `mta` command run as a real child process against a temp data folder, and configuration
// loading: defaults ← file ← MTA_* environment, invalid values refused with the setting's name.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { startWarnings } from '../../src/config/check.js';
import { tempDir, openTestDb, testEngine } from '../helpers/service.js';
import { mta, BIN } from '../helpers/cli.js';

describe('mta command line', function () {
  this.timeout(60_000);
  const dir = tempDir();
  const env = { MTA_DATA_DIR: dir };

  it('creates a team, keys and credits, printing only the result on stdout', async () => {
    const team = await mta(['team', 'create', 'acme'], env);
    expect(team.code).to.equal(0);
    expect(team.stdout.trim()).to.match(/^team_[0-9a-z]{26}$/);
    const key = await mta(
      ['key', 'create', '--team', 'acme', '--mode', 'live', '--scopes', 'emails:send,keys:write', '--name', 'ci'],
      env,
    );
    expect(key.stdout.trim()).to.match(/^ps_live_[\w-]+$/);
    const test = await mta(['key', 'create', '--team', 'acme'], env);
    expect(test.stdout.trim()).to.match(/^ps_test_/);
    const credits = await mta(['credits', 'add', '--team', 'acme', '--amount', '5000', '--usd', '2'], env);
    const bal = JSON.parse(credits.stdout);
    expect(bal).to.include({
      object: 'credit_balance',
      purchased_remaining: 5000,
      free_remaining: 3000,
      available: 8000,
    });
  });

  it('fails with a clear message and a non-zero exit', async () => {
    const dup = await mta(['team', 'create', 'acme'], env);
    expect(dup.code).to.not.equal(0);
    expect(dup.stdout).to.equal('');
    expect(dup.stderr).to.match(/already exists/);
    const noTeam = await mta(['key', 'create', '--team', 'nobody'], env);
    expect(noTeam.code).to.not.equal(0);
    expect(noTeam.stderr).to.match(/team/i);
    const unknown = await mta(['frobnicate'], env);
    expect(unknown.code).to.not.equal(0);
    const badAmount = await mta(['credits', 'add', '--team', 'acme', '--amount', 'lots'], env);
    expect(badAmount.code).to.not.equal(0);
    expect(badAmount.stderr).to.match(/amount/);
  });

  it('revokes a key by id', async () => {
    const db = await openTestDb(dir);
    const id = (db.prepare("SELECT id FROM api_keys WHERE mode = 'test'").get() as { id: string }).id;
    db.close();
    expect((await mta(['key', 'revoke', id], env)).code).to.equal(0);
    const db2 = await openTestDb(dir);
    expect(
      (db2.prepare('SELECT revoked_at FROM api_keys WHERE id = ?').get(id) as { revoked_at: number | null }).revoked_at,
    ).to.be.a('number');
    db2.close();
  });

  it('lists inbound reports kept for the operator and prints a kept raw message', async () => {
    const db = await openTestDb(dir);
    db.prepare(
      "INSERT INTO inbound_reports (id, kind, outcome, rcpt_to, parsed_json, raw_size, raw, created_at) VALUES ('rep_1', 'other', 'unmatched', 'fbl@b.test', '{\"kind\":\"other\"}', 5, ?, ?)",
    ).run(Buffer.from('hello'), Date.now());
    db.close();
    const list = await mta(['reports', 'list', '--outcome', 'unmatched'], env);
    expect(list.code).to.equal(0);
    const rows = JSON.parse(list.stdout);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ id: 'rep_1', outcome: 'unmatched', has_raw: true });
    expect(rows[0].parsed).to.deep.equal({ kind: 'other' });
    expect((await mta(['reports', 'show', 'rep_1'], env)).stdout).to.equal('hello');
    expect((await mta(['reports', 'list', '--outcome', 'lost'], env)).code).to.not.equal(0);
  });

  // Refused before any store is opened (src/main.ts): the SQLite pass runs it.
  it('serve refuses an invalid setting, naming it', async function () {
    if (testEngine() === 'pg') this.skip();
    const r = await mta(['serve'], { ...env, MTA_OUTBOUND_TLS: 'sometimes' });
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.match(/MTA_OUTBOUND_TLS: one of opportunistic, required, off; got "sometimes"/);
  });

  // Its child gets no MTA_DATABASE_URL: it runs on SQLite on either pass, so the SQLite pass runs it.
  it('serve logs one line naming every listener with its real port, and stops on SIGTERM', async function () {
    if (testEngine() === 'pg') this.skip();
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        PATH: process.env.PATH!,
        ...env,
        MTA_HTTP_PORT: '0',
        MTA_SMTP_PORT: '0',
        MTA_SMTP_HOST: '127.0.0.1',
        MTA_SUBMISSION_PORT: '0',
      },
    });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    const line = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no listening line: ${err}`)), 30_000);
      child.stderr.on('data', () => {
        const m = /.*"msg":"listening: [^"]*".*/.exec(err);
        if (m) {
          clearTimeout(t);
          resolve(m[0]);
        }
      });
    });
    const http = /http=([\d.]+):(\d+)/.exec(line)!;
    expect(Number(http[2])).to.be.greaterThan(0);
    const res = await fetch(`http://${http[1]}:${http[2]}/healthz`);
    expect(res.status).to.equal(200);
    const code = await new Promise<number | null>((resolve) => {
      child.on('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    expect(code).to.equal(0);
  });
});

describe('configuration', () => {
  it('layers defaults, a JSON file and the environment (environment wins)', () => {
    const file = path.join(tempDir(), 'c.json');
    fs.writeFileSync(file, JSON.stringify({ httpPort: 4000, rateLimit: 7, hostname: 'file.test' }));
    const c = loadConfig({ file, env: { MTA_RATE_LIMIT: '9', MTA_DNS_SERVERS: '127.0.0.1:5353, 127.0.0.2' } });
    expect(c).to.include({
      httpPort: 4000,
      rateLimit: 9,
      hostname: 'file.test',
      bounceDomain: 'bounces.file.test',
      httpHost: '127.0.0.1',
      outboundPort: 25,
    });
    expect(c.dnsServers).to.deep.equal(['127.0.0.1:5353', '127.0.0.2']);
  });
  it('refuses invalid values and unknown settings with a message naming them', () => {
    expect(() => loadConfig({ env: { MTA_HTTP_PORT: '70000' } })).to.throw(/MTA_HTTP_PORT: an integer from 0 to 65535/);
    expect(() => loadConfig({ env: { MTA_ALLOW_PRIVATE_WEBHOOKS: 'maybe' } })).to.throw(/MTA_ALLOW_PRIVATE_WEBHOOKS/);
    expect(() => loadConfig({ env: { MTA_PUBLIC_URL: 'ftp://x' } })).to.throw(/publicUrl/);
    const file = path.join(tempDir(), 'c.json');
    fs.writeFileSync(file, JSON.stringify({ nope: 1 }));
    expect(() => loadConfig({ file, env: {} })).to.throw(/nope/);
    expect(() => loadConfig({ env: { MTA_RETRY_MIN_SECONDS: '100', MTA_RETRY_MAX_SECONDS: '10' } })).to.throw(
      /MTA_RETRY_MAX_SECONDS/,
    );
  });
  it('accepts the retired HTTP workers settings with any value, from the environment or a file, and warns', () => {
    // An upgrade must not fail over them (docs/operations.md "HTTP workers"): on SQLite, out of their old ranges too.
    const env = { MTA_HTTP_WORKERS: '2', MTA_HTTP_LEASE_MS: '10', MTA_HOSTNAME: 'mta.example.com' };
    const fromEnv = loadConfig({ env });
    expect(startWarnings(fromEnv, env)).to.eql([
      'MTA_HTTP_WORKERS=2, MTA_HTTP_LEASE_MS=10 ignored: HTTP workers were retired on 2026-11-30 (issue 38; slower than one process once the event loop stopped waiting for PostgreSQL); one process serves HTTP; remove the setting (docs/operations.md "HTTP workers")',
    ]);
    const file = path.join(tempDir(), 'workers.json');
    fs.writeFileSync(file, JSON.stringify({ httpWorkers: 64, httpLeaseMs: 250, hostname: 'mta.example.com' }));
    const [warning, ...more] = startWarnings(loadConfig({ file, env: {} }), {});
    expect(warning).to.match(/^httpWorkers: 64, httpLeaseMs: 250 ignored: HTTP workers were retired/);
    expect(more).to.eql([]);
    expect(startWarnings(loadConfig({ env: { MTA_HOSTNAME: 'mta.example.com' } }), {}), 'unset: no warning').to.eql([]);
    expect(loadConfig({ env: { MTA_HTTP_WORKERS: 'lots' } }).httpWorkers, 'kept as given').to.equal('lots');
  });
});
