// `mta backup FILE` against a running `mta serve` (a child process) that keeps accepting email: the copy is a SQLite
// store with the team, its keys, the domain's DKIM key and the emails accepted before it; the file is owner-only;
// an existing file is refused; the restore procedure (stop, copy back, start) gives a service that reads the emails.
// On PostgreSQL the command refuses and names pg_dump.
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { tempDir } from '../helpers/temp.js';
import { testEngine } from '../helpers/service.js';
import { mta, quietEnv, serveChild } from '../helpers/cli.js';
import { checkedFetch, servedContract } from '../helpers/contract.js';

const exited = (c: ChildProcess) =>
  new Promise<void>((resolve) => (c.exitCode !== null ? resolve() : c.once('exit', () => resolve())));

describe('mta backup', function () {
  this.timeout(120_000);
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
  });

  it('PostgreSQL: exits 1 and points to pg_dump', async function () {
    if (testEngine() !== 'pg') this.skip();
    const env = quietEnv(tempDir('mta-backup-pg-'));
    expect((await mta(['team', 'create', 'b'], env)).code).to.equal(0);
    const r = await mta(['backup', path.join(tempDir('mta-backup-out-'), 'copy.sqlite')], env);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/pg_dump/);
  });

  it('copies the store of a running service that accepts mail; the copy restores', async function () {
    if (testEngine() !== 'sqlite') this.skip();
    const dir = tempDir('mta-backup-');
    const env = quietEnv(dir);
    expect((await mta(['team', 'create', 'bk'], env)).code).to.equal(0);
    const key = (await mta(['key', 'create', '--team', 'bk'], env)).stdout.trim();
    expect((await mta(['domain', 'add', '--team', 'bk', 'sender.test'], env)).code).to.equal(0);
    const svc = await serveChild(env);
    child = svc.child;
    const checked = checkedFetch(await servedContract(svc.url)); // answers checked against the document
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const accepted: string[] = [];
    let stop = false;
    let n = 0;
    const sender = async () => {
      while (!stop) {
        const i = n++;
        const r = await checked(`${svc.url}/v1/emails`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ from: 'app@sender.test', to: `u${i}@rcpt.test`, subject: `b${i}`, text: 'x' }),
        });
        expect(r.status).to.equal(202);
        accepted.push(((await r.json()) as { id: string }).id);
      }
    };
    const senders = Array.from({ length: 4 }, sender);
    while (accepted.length < 50) await new Promise((r) => setTimeout(r, 5));
    const before = [...accepted];
    const out = path.join(tempDir('mta-backup-out-'), 'copy.sqlite');
    const r = await mta(['backup', out], env);
    const during = accepted.length;
    stop = true;
    await Promise.all(senders);
    expect(r.code, r.stderr).to.equal(0);
    expect(JSON.parse(r.stdout)).to.include({ file: out });
    expect(during).to.be.greaterThan(before.length); // the service kept accepting mail while the copy was made
    expect(fs.statSync(out).mode & 0o777).to.equal(0o600);

    const copy = new Database(out, { readonly: true });
    expect(copy.pragma('integrity_check', { simple: true })).to.equal('ok');
    expect(copy.prepare('SELECT name FROM teams').pluck().all()).to.include('bk');
    expect(copy.prepare('SELECT count(*) FROM api_keys').pluck().get()).to.be.greaterThan(0);
    const dkim = copy.prepare("SELECT dkim_private_key FROM domains WHERE name = 'sender.test'").pluck().get();
    expect(dkim).to.match(/PRIVATE KEY/);
    const ids = new Set(copy.prepare('SELECT id FROM emails').pluck().all() as string[]);
    for (const id of before) expect(ids.has(id), id).to.equal(true);
    copy.close();

    // An existing file is never overwritten.
    const again = await mta(['backup', out], env);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.match(/exists/);

    // Restore: stop the service, put the copy in place of the store, start it again.
    child.kill('SIGTERM');
    await exited(child);
    for (const f of ['mta.sqlite', 'mta.sqlite-wal', 'mta.sqlite-shm']) fs.rmSync(path.join(dir, f), { force: true });
    fs.copyFileSync(out, path.join(dir, 'mta.sqlite'));
    const restored = await serveChild(env);
    child = restored.child;
    const got = await checked(`${restored.url}/v1/emails/${before[0]}`, { headers: auth });
    expect(got.status).to.equal(200);
    expect(((await got.json()) as { subject: string }).subject).to.match(/^b\d+$/);
  });
});
