// SMTP submission benchmark: messages per second accepted (250 with an em_ id) by the submission listener,
// from nodemailer pooled SMTP connections (STARTTLS, AUTH PLAIN, test key), with per-message latency.
import nodemailer from 'nodemailer';
import { startChild, mta, fmt, pct, memoryOf } from './bench-lib.js';

export async function benchSubmission(opts: { seconds?: number; connections?: number } = {}) {
  const seconds = opts.seconds ?? 10;
  const connections = opts.connections ?? 8; // under the listener's 10 connections per client address
  const child = await startChild();
  try {
    mta(child, 'team', 'create', 'bench');
    const key = mta(child, 'key', 'create', '--team', 'bench');
    const [host, port] = child.listeners.submission.split(':');
    const transport = nodemailer.createTransport({
      host,
      port: Number(port),
      pool: true,
      maxConnections: connections,
      maxMessages: Infinity,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
      auth: { user: 'apikey', pass: key },
    });
    const mail = {
      from: 'Bench <bench@bench.example>',
      to: 'delivered@example.com',
      subject: 'Your sign-in code',
      text: 'Your code is 123456',
      html: '<p>Your code is <b>123456</b></p>',
    };
    const latencies: number[] = [];
    let failed = 0;
    const worker = async (until: number, record: boolean) => {
      while (Date.now() < until) {
        const t = performance.now();
        try {
          const info = await transport.sendMail(mail);
          if (!/queued as em_/.test(info.response ?? '')) failed++;
          else if (record) latencies.push(performance.now() - t);
        } catch {
          failed++;
        }
      }
    };
    const run = (ms: number, record: boolean) =>
      Promise.all(Array.from({ length: connections * 2 }, () => worker(Date.now() + ms, record)));
    await run(2000, false); // warm-up: connections open, TLS and AUTH done
    await run(seconds * 1000, true);
    transport.close();
    latencies.sort((a, b) => a - b);
    const rate = latencies.length / seconds;
    console.log(
      `SMTP submission: ${fmt(rate, 0)} messages/s accepted (250), failed ${failed}; latency p50 ${fmt(pct(latencies, 50))} ms, p99 ${fmt(pct(latencies, 99))} ms (${connections} pooled STARTTLS connections, ${seconds} s, test key)`,
    );
    console.log(`SMTP service after the run: ${await memoryOf(child)}`);
    return { per_s: rate, failed };
  } finally {
    await child.stop();
  }
}
