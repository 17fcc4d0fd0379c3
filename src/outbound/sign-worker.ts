// The outbound worker thread: composes and DKIM-signs messages, and runs the SMTP client sessions, off the delivery
// loop's thread (which keeps to the store: claims, scheduling, results). Messages in, then out:
//   {id, job: SignJob}                         → {id, raw} (the signed bytes, transferred) or {id, error}
//   {smtp: SmtpOptions}                        (once, before any send: the session pool's settings)
//   {id, send: SendArgs}                       → {id, sent: SendResult} (one SMTP transaction; never fails)
//   {dropWaiting: true}                        (sends waiting for a session answer at once, not started)
//   {closeAll: true}                           → {closedAll: true} once every session is told to go
//   {gc: true}                                 (a full GC after a burst)
//                                              → {idleClosed: poolKey} when an idle session goes
// Every `sent` and `idleClosed` carries the pool's counts (open sessions, pool keys with idle ones) for metrics/tests.
// Both ways, what a side posts in one event-loop turn travels as one array (batch-port.ts). Keeps only keys and
// sessions; the store never comes here.
import { parentPort } from 'node:worker_threads';
import { composeAndSign, type SignJob } from './message.js';
import { SmtpClient, type SmtpOptions, type Target, type SendOptions } from './smtp.js';
import { fullGc } from './trim.js';
import { BatchPort } from './batch-port.js';
import { traceMemory } from '../lib/memory-trace.js';

/** What SmtpClient.send takes, as one message (raw copied into a transferred buffer). */
export interface SendArgs {
  t: Target;
  from: string;
  rcpts: string[];
  raw: Uint8Array;
  deadline: number;
  source: string | undefined;
  opt: SendOptions;
}
export type WorkerIn =
  | { id: number; job: SignJob }
  | { id: number; send: SendArgs }
  | { smtp: Omit<SmtpOptions, 'onIdleClosed'> }
  | { closeAll: true }
  | { dropWaiting: true }
  | { gc: true };

// Node's stream.pipeline (under nodemailer's composer) aborts a fresh AbortController at every finish, and each abort
// builds a DOMException with a stack trace: ~30 µs per message for a stack nobody reads here (errors leave as text).
Error.stackTraceLimit = 0;

let smtp: SmtpClient | null = null;
const counts = () => ({ open: smtp?.openConnections ?? 0, idlePools: smtp?.idlePools ?? 0 });
const port = new BatchPort<unknown>(parentPort!);

parentPort!.on('message', (batch: WorkerIn[]) => {
  for (const m of batch) handle(m);
});

function handle(m: WorkerIn): void {
  if ('gc' in m) return void fullGc();
  if ('smtp' in m) {
    smtp = new SmtpClient({ ...m.smtp, onIdleClosed: (key) => port.post({ idleClosed: key, ...counts() }) });
    return;
  }
  if ('dropWaiting' in m) return void smtp?.dropWaiting();
  if ('closeAll' in m) {
    smtp?.closeAll();
    smtp = null;
    return void port.post({ closedAll: true });
  }
  if ('send' in m) {
    const a = m.send;
    if (!smtp) return void port.post({ id: m.id, error: 'no SMTP client in the worker' });
    const raw = Buffer.from(a.raw.buffer, a.raw.byteOffset, a.raw.byteLength);
    smtp.send(a.t, a.from, a.rcpts, raw, a.deadline, a.source, a.opt).then(
      (sent) => port.post({ id: m.id, sent, ...counts() }),
      (err: Error) => port.post({ id: m.id, error: err.message }),
    );
    return;
  }
  composeAndSign(m.job).then(
    (raw) => {
      const ab = raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength);
      port.post({ id: m.id, raw: ab }, ab as ArrayBuffer);
    },
    (err: Error) => port.post({ id: m.id, error: err.message }),
  );
}
traceMemory('worker', () => ({ sessions: smtp?.openConnections ?? 0 }));
port.post({ ready: true });
