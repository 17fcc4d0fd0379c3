// `npx tsx scripts/openapi-doc.ts FILE`: writes the OpenAPI document the service serves (GET /v1/openapi.json) to
// FILE (stdout without one). It starts the real service on loopback, port 0, with every feature and a throwaway
// SQLite folder, so the document is the served one, not a copy. Used by `npm run lint:api` (Redocly's lint).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/load.js';
import { startService } from '../src/service.js';
import { createLogger } from '../src/log.js';

export async function servedDocument(): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mta-openapi-'));
  const env: Record<string, string> = {
    MTA_DATA_DIR: dataDir,
    MTA_HTTP_HOST: '127.0.0.1',
    MTA_DNS_SERVERS: '127.0.0.1:9',
  };
  for (const p of ['HTTP', 'SMTP', 'SUBMISSION']) env[`MTA_${p}_PORT`] = '0';
  for (const p of ['SMTP', 'SUBMISSION']) env[`MTA_${p}_HOST`] = '127.0.0.1';
  const svc = await startService(loadConfig({ env }), { log: createLogger('silent') });
  try {
    const res = await fetch(`${svc.url}/v1/openapi.json`);
    if (res.status !== 200) throw new Error(`GET /v1/openapi.json answered ${res.status}`);
    return `${JSON.stringify(await res.json(), null, 2)}\n`;
  } finally {
    await svc.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // No top-level await: a test may import this module, and mocha loads tests as CommonJS.
  void servedDocument().then((doc) => {
    if (process.argv[2]) fs.writeFileSync(process.argv[2], doc);
    else process.stdout.write(doc);
  });
}
