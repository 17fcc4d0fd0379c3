// Worker-thread side of parse-pool.ts: answers each raw message it is sent with parseReport's
// reading ({ report }) or { error }; says 'ready' once loaded. One message at a time.
import { parentPort } from 'node:worker_threads';
import { parseReport } from './parse.js';

const port = parentPort;
// imported outside a worker (scripts/check-regex.ts reads every module's exports): does nothing
if (port) {
  port.on('message', (raw: Uint8Array) => {
    parseReport(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)).then(
      (report) => port.postMessage({ report }),
      (err: unknown) => port.postMessage({ error: err instanceof Error ? err.message : String(err) }),
    );
  });
  port.postMessage('ready');
}
