// The data folder holds DKIM private keys and webhook secrets: whatever mode it had, the `mta`
// command (and so the service, which opens the store the same way) leaves it and the store owner-only.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir, testEngine } from '../helpers/service.js';
import { mta } from '../helpers/cli.js';
import { openDb } from '../../src/store/db.js';

describe('data folder mode', function () {
  this.timeout(60_000);

  it('tightens an existing world-readable data folder to 0700 and the store to 0600', async function () {
    if (testEngine() === 'pg') this.skip(); // the store is in PostgreSQL: none of it lives in the folder
    const dir = tempDir();
    openDb(dir).close(); // the store `mta serve` made; then loosened by hand
    fs.chmodSync(dir, 0o755);
    fs.chmodSync(path.join(dir, 'mta.sqlite'), 0o644);
    const res = await mta(['team', 'create', 'modes'], { MTA_DATA_DIR: dir });
    expect(res.code).to.equal(0);
    expect(fs.statSync(dir).mode & 0o777).to.equal(0o700);
    expect(fs.statSync(path.join(dir, 'mta.sqlite')).mode & 0o777).to.equal(0o600);
  });
});
