// The signing worker: composes and DKIM-signs messages off the delivery loop's thread. In: {id, job: SignJob};
// out: {id, raw} (the signed message's bytes, transferred) or {id, error}. Holds nothing between jobs but the key cache.
import { parentPort } from 'node:worker_threads';
import { composeAndSign, type SignJob } from './message.js';

parentPort!.on('message', (m: { id: number; job: SignJob }) => {
  composeAndSign(m.job).then(
    (raw) => {
      const ab = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
      parentPort!.postMessage({ id: m.id, raw: ab }, [ab as ArrayBuffer]);
    },
    (err: Error) => parentPort!.postMessage({ id: m.id, error: err.message }),
  );
});
parentPort!.postMessage({ ready: true });
