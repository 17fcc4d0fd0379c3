// The operator's contract of the `mta` command (operations spec, "Running it in production"): a command other than
// serve never makes a store (exit 1 naming where it looked), a usage error is exit 2 and makes nothing, every command
// takes --config FILE, and `mta key list` lists a team's keys without their secrets. Real child processes.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir, openTestDb, pgUrlFor, testEngine } from '../helpers/service.js';
import { mta } from '../helpers/cli.js';
import { createDatabase, sharedPg } from '../helpers/pg.js';
import { NoStoreError, openDb } from '../../src/store/db.js';

describe('mta command line: the store it opens', function () {
  this.timeout(60_000);

  // This test and the usage errors run the same child process on either pass (no store setting in its environment):
  // the SQLite pass runs them.
  it('in a folder with no store and no MTA_DATA_DIR, exits 1 naming ./data and creates nothing', async function () {
    if (testEngine() === 'pg') this.skip();
    const cwd = tempDir();
    for (const args of [['team', 'create', 'acme'], ['key', 'list', '--team', 'acme'], ['sites']]) {
      const r = await mta(args, {}, { cwd });
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stdout).to.equal('');
      expect(r.stderr).to.equal(
        `mta: no store at ${path.join(fs.realpathSync(cwd), 'data')} (set MTA_DATA_DIR or --config)\n`,
      );
    }
    expect(fs.readdirSync(cwd)).to.deep.equal([]);
  });

  it('an MTA_DATA_DIR without a store is refused too, and stays empty', async function () {
    if (testEngine() === 'pg') this.skip(); // the folder stands for a database there: next test
    const dir = tempDir();
    const r = await mta(['team', 'create', 'acme'], { MTA_DATA_DIR: dir }, { noStore: true });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.equal(`mta: no store at ${dir} (set MTA_DATA_DIR or --config)\n`);
    expect(fs.readdirSync(dir)).to.deep.equal([]);
  });

  it('an MTA_DATABASE_URL naming a database without the tables of the service is refused, and stays empty', async function () {
    if (testEngine() !== 'pg') this.skip();
    const url = await createDatabase((await sharedPg()).url);
    const r = await mta(['team', 'create', 'acme'], { MTA_DATABASE_URL: url });
    expect(r.code, r.stderr).to.equal(1);
    expect(r.stderr).to.match(/^mta: no store at postgres(ql)?:\/\/\S+ \(set MTA_DATA_DIR or --config\)\n$/);
    expect(r.stderr).not.to.match(/:[^@/]+@/); // no password printed
    expect(() => openDb('', { databaseUrl: url, create: false })).to.throw(NoStoreError); // still none
  });

  it('a usage error exits 2 with the usage text and creates nothing', async function () {
    if (testEngine() === 'pg') this.skip();
    const cwd = tempDir();
    for (const args of [
      ['team', 'create'],
      ['key', 'list'],
      ['frobnicate'],
      ['team', 'create', 'x', '--bogus'],
      ['--config'],
    ]) {
      const r = await mta(args, {}, { cwd });
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(2);
      expect(r.stdout).to.equal('');
      expect(r.stderr).to.match(/usage: mta/);
    }
    expect(fs.readdirSync(cwd)).to.deep.equal([]);
  });

  it('--config FILE names the store for team create and key list, from any folder', async () => {
    const dir = tempDir();
    (await openTestDb(dir)).close(); // the store `mta serve` made
    const file = path.join(tempDir(), 'mta.json');
    const store = testEngine() === 'pg' ? { databaseUrl: await pgUrlFor(dir) } : { dataDir: dir };
    fs.writeFileSync(file, JSON.stringify({ ...store, hostname: 'mta.test' }));
    const cwd = tempDir();
    const team = await mta(['team', 'create', 'acme', '--config', file], {}, { cwd });
    expect(team.code, team.stderr).to.equal(0);
    expect(team.stdout.trim()).to.match(/^team_[0-9a-z]{26}$/);
    const key = await mta(['--config', file, 'key', 'create', '--team', 'acme', '--name', 'ci'], {}, { cwd });
    expect(key.code, key.stderr).to.equal(0);
    const list = await mta(['key', 'list', `--config=${file}`, '--team', 'acme'], {}, { cwd });
    expect(list.code, list.stderr).to.equal(0);
    const keys = JSON.parse(list.stdout);
    expect(keys).to.have.length(1);
    expect(fs.readdirSync(cwd)).to.deep.equal([]);
    const db = await openTestDb(dir);
    const teamId = (db.prepare("SELECT id FROM teams WHERE name = 'acme'").get() as { id: string }).id;
    db.close();
    expect(teamId).to.equal(team.stdout.trim());
  });

  it('key list: every key of the team with its state, never the secret nor its hash', async () => {
    const env = { MTA_DATA_DIR: tempDir() };
    await mta(['team', 'create', 'acme'], env);
    await mta(['team', 'create', 'other'], env);
    const live = (
      await mta(['key', 'create', '--team', 'acme', '--mode', 'live', '--name', 'prod'], env)
    ).stdout.trim();
    const test = (await mta(['key', 'create', '--team', 'acme', '--scopes', 'emails:send'], env)).stdout.trim();
    await mta(['key', 'create', '--team', 'other'], env);
    const before = JSON.parse((await mta(['key', 'list', '--team', 'acme'], env)).stdout);
    expect(before).to.have.length(2);
    await mta(['key', 'revoke', before.find((k: { mode: string }) => k.mode === 'test').id], env);
    const r = await mta(['key', 'list', '--team', 'acme'], env);
    expect(r.code, r.stderr).to.equal(0);
    const keys = JSON.parse(r.stdout) as Record<string, unknown>[];
    for (const k of keys)
      expect(Object.keys(k).sort()).to.deep.equal(
        ['created_at', 'id', 'last_used_at', 'mode', 'name', 'revoked_at', 'scopes'].sort(),
      );
    const byMode = Object.fromEntries(keys.map((k) => [k.mode, k]));
    expect(byMode.live).to.include({ name: 'prod', last_used_at: null, revoked_at: null });
    expect(byMode.live.id).to.match(/^key_/);
    expect(byMode.test.scopes).to.deep.equal(['emails:send']);
    expect(byMode.test.revoked_at).to.match(/^\d{4}-\d\d-\d\dT/);
    expect(r.stdout).not.to.include(live.slice(8));
    expect(r.stdout).not.to.include(test.slice(8));
    expect(r.stdout).not.to.match(/[0-9a-f]{64}/); // no SHA-256 hash
    const none = await mta(['key', 'list', '--team', 'nobody'], env);
    expect(none.code).to.equal(1);
  });
});
