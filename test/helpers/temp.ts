// Temporary folders for tests, removed when the test process exits.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const tempDirs: string[] = [];
/** A fresh folder under the system's temporary one, removed when the test process exits (MTA_TEST_KEEP=1 keeps it). */
export function tempDir(prefix = 'mta-test-'): string {
  if (tempDirs.length === 0 && process.env.MTA_TEST_KEEP !== '1')
    process.on('exit', () => {
      for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true, maxRetries: 2 });
    });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}
