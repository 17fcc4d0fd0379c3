// The signing worker: composes and DKIM-signs messages off the delivery loop's thread. In: {id, job: SignJob}, or
// {gc: true} (a full GC after a burst); out: {id, raw} (the signed bytes, transferred) or {id, error}. Keeps only keys.
import { parentPort } from 'node:worker_threads';
import { composeAndSign, type SignJob } from './message.js';
import { fullGc } from './trim.js';

parentPort!.on('message', (m: { id: number; job: SignJob } | { gc: true }) => {
  if ('gc' in m) return void fullGc();
  composeAndSign(m.job).then(
    (raw) => {
      const ab = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
      parentPort!.postMessage({ id: m.id, raw: ab }, [ab as ArrayBuffer]);
    },
    (err: Error) => parentPort!.postMessage({ id: m.id, error: err.message }),
  );
});
parentPort!.postMessage({ ready: true });
