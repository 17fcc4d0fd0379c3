// `npm run bench -- bodies`: memory under large bodies. Starts the service, sends six (then, on a fresh service,
// eight) ~40 MB POST /v1/emails/batch bodies at once with a test key, and prints the service's resident set before,
// at its peak (VmHWM, /proc) and after, with each request's status (202, 422 or 503 server_busy: none may be dropped
// or time out) and a plain POST /v1/emails sent after the wave. BENCH_BODIES (e.g. "6,8") sets the waves.
import http from 'node:http';
import fs from 'node:fs';
import { startChild, mta, fmt, SIGNIN_EMAIL, type Child } from './bench-lib.js';

const MIB = 1048576;
/** About 40 MB (under the default MTA_MAX_BODY_BYTES of 40 MiB): 20 emails of 0.5 MB html and a 1.5 MB attachment. */
export function bigBatch(): Buffer {
  const html = `<p>${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(8_600)}</p>`;
  const content = Buffer.alloc(1_120_000, 'binary attachment bytes \u00ff\u0001').toString('base64');
  const items = [...Array(20)].map((_, i) => ({
    from: 'Bench <bench@bench.example>',
    to: ['delivered@example.com'],
    subject: `Large ${i}`,
    html,
    attachments: [{ filename: `report-${i}.bin`, content }],
  }));
  return Buffer.from(JSON.stringify(items));
}

/** VmRSS and VmHWM of a process, bytes (Linux). */
function memOf(pid: number | undefined): { rss: number; hwm: number } {
  const st = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(st)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

interface Answer {
  status: number | string;
  code?: string;
  retryAfter?: string;
  ms: number;
}

function post(url: string, key: string, body: Buffer, timeoutMs = 180_000): Promise<Answer> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length },
        timeout: timeoutMs,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => {
          let code: string | undefined;
          try {
            code = JSON.parse(Buffer.concat(parts).toString()).error?.code;
          } catch {
            /* not JSON */
          }
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode!, code, retryAfter, ms: Date.now() - t0 });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (err) => resolve({ status: `dropped (${err.message})`, ms: Date.now() - t0 }));
    req.end(body);
  });
}

async function wave(n: number, body: Buffer): Promise<void> {
  const child: Child = await startChild();
  try {
    mta(child, 'team', 'create', 'bench');
    const key = mta(child, 'key', 'create', '--team', 'bench');
    const before = memOf(child.proc.pid);
    let peak = before.rss;
    const sampler = setInterval(() => (peak = Math.max(peak, memOf(child.proc.pid).rss)), 10);
    const t0 = Date.now();
    const answers = await Promise.all([...Array(n)].map(() => post(`${child.http}/v1/emails/batch`, key, body)));
    const wallMs = Date.now() - t0;
    clearInterval(sampler);
    const after = memOf(child.proc.pid);
    const single = await post(`${child.http}/v1/emails`, key, Buffer.from(SIGNIN_EMAIL));
    const mib = (b: number) => fmt(b / MIB, 0);
    console.log(
      `BODIES ${n} x ${fmt(body.length / 1e6, 1)} MB batches in parallel: RSS before ${mib(before.rss)} MiB, peak ${mib(Math.max(peak, after.hwm))} MiB (VmHWM ${mib(after.hwm)}, sampled ${mib(peak)}), after ${mib(after.rss)} MiB; ${fmt(wallMs / 1000, 1)} s`,
    );
    const counts = new Map<string, number>();
    for (const a of answers) {
      const k = `${a.status}${a.code ? ` ${a.code}` : ''}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    console.log(`BODIES   answers: ${[...counts].map(([k, c]) => `${c} x ${k}`).join(', ')}`);
    console.log(
      `BODIES   each: ${answers.map((a) => `${a.status}${a.code ? `/${a.code}` : ''}${a.retryAfter ? ` (Retry-After ${a.retryAfter})` : ''} ${fmt(a.ms / 1000, 1)} s`).join('; ')}`,
    );
    console.log(`BODIES   then POST /v1/emails: ${single.status}${single.code ? ` ${single.code}` : ''}`);
    for (const l of child.logTail) console.log(`BODIES   log: ${l.slice(0, 300)}`);
  } finally {
    await child.stop();
  }
}

export async function benchBodies(): Promise<void> {
  const body = bigBatch();
  for (const n of (process.env.BENCH_BODIES ?? '6,8').split(',').map(Number)) await wave(n, body);
}
