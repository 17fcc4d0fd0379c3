// Worker-thread side of parse-pool.ts: answers each raw message it is sent with parseReport's
// reading ({ report }), a DMARC aggregate report's reading ({ dmarc }), a received message's ({ mail }) or { error }; says 'ready' once loaded.
// One message at a time.
import { parentPort } from 'node:worker_threads';
import { parseReport } from './parse.js';
import { readDmarcMessage } from './dmarc.js';
import { readMail } from './mail.js';

const view = (raw: Uint8Array) => Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);

const port = parentPort;
// imported outside a worker (scripts/check-regex.ts reads every module's exports): does nothing
if (port) {
  const fail = (err: unknown) => port.postMessage({ error: err instanceof Error ? err.message : String(err) });
  port.on('message', (raw: Uint8Array | { dmarc: Uint8Array; truncated: boolean } | { mail: Uint8Array }) => {
    if ('mail' in raw) return void readMail(view(raw.mail)).then((mail) => port.postMessage({ mail }), fail);
    if (!(raw instanceof Uint8Array)) {
      try {
        return port.postMessage({ dmarc: readDmarcMessage(view(raw.dmarc), raw.truncated) });
      } catch (err) {
        return port.postMessage({ error: err instanceof Error ? err.message : String(err) });
      }
    }
    parseReport(view(raw)).then(
      (report) => port.postMessage({ report }),
      (err: unknown) => port.postMessage({ error: err instanceof Error ? err.message : String(err) }),
    );
  });
  port.postMessage('ready');
}
