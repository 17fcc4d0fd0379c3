// Receiving benchmark (issue 35): messages per second received at a team's receiving domain by the inbound listener
// (nodemailer pooled SMTP connections, a small multipart with one attachment) and posted as `inbound.received` to a
// loopback endpoint; latency from the start of the SMTP transaction to the webhook POST's arrival (an upper bound of
// end of DATA → POST) and from the 250 reply to the POST. SPF/DKIM/DMARC are looked up on a loopback DNS server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { TestDns } from '../test/helpers/dns.js';
import { startChild, mta, fmt, pct, memoryOf } from './bench-lib.js';

export async function benchReceiving(opts: { seconds?: number; connections?: number } = {}) {
  const seconds = opts.seconds ?? 10;
  const connections = opts.connections ?? 8;
  const dns = await new TestDns().start();
  dns.set('sender.bench', { TXT: ['v=spf1 ip4:127.0.0.1 -all'] });
  const started = new Map<string, number>();
  const replied = new Map<string, number>();
  const toPost: number[] = [];
  const fromReply: number[] = [];
  const sink = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const at = performance.now();
      const subject = (JSON.parse(body) as { data: { inbound: { subject: string } } }).data.inbound.subject;
      const t0 = started.get(subject);
      if (t0 !== undefined) toPost.push(at - t0);
      const t1 = replied.get(subject);
      if (t1 !== undefined) fromReply.push(at - t1);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
  const child = await startChild({
    MTA_DNS_SERVERS: dns.server,
    MTA_ALLOW_PRIVATE_WEBHOOKS: '1',
    MTA_INBOUND_MAX_CLIENTS_PER_IP: String(connections * 2),
  });
  try {
    mta(child, 'team', 'create', 'bench');
    const key = mta(
      child,
      'key',
      'create',
      '--team',
      'bench',
      '--mode',
      'live',
      '--scopes',
      'domains:write,webhooks:write',
    );
    const api = async (method: string, p: string, body: unknown) => {
      const r = await fetch(child.http + p, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
      return (await r.json()) as { id: string };
    };
    const d = await api('POST', '/v1/domains', { name: 'in.bench' });
    await api('PATCH', `/v1/domains/${d.id}`, { receiving: true });
    const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;
    await api('POST', '/v1/webhooks', { url, events: ['inbound.received'] });
    const [host, port] = child.listeners.smtp.split(':');
    const transport = nodemailer.createTransport({
      host,
      port: Number(port),
      pool: true,
      maxConnections: connections,
      maxMessages: Infinity,
      tls: { rejectUnauthorized: false },
    });
    let seq = 0;
    let failed = 0;
    const worker = async (until: number, record: boolean) => {
      while (Date.now() < until) {
        const subject = `${record ? 'b' : 'w'}${seq++}`;
        const t = performance.now();
        if (record) started.set(subject, t);
        try {
          await transport.sendMail({
            from: 'Customer <c@sender.bench>',
            to: `reply+t${seq}@in.bench`,
            subject,
            text: 'A reply to your receipt.',
            html: '<p>A reply to your receipt.</p>',
            attachments: [{ filename: 'note.txt', content: 'attached note' }],
          });
          if (record) replied.set(subject, performance.now());
        } catch {
          failed++;
        }
      }
    };
    const run = (ms: number, record: boolean) =>
      Promise.all(Array.from({ length: connections * 2 }, () => worker(Date.now() + ms, record)));
    await run(2000, false);
    await run(seconds * 1000, true);
    transport.close();
    const sent = replied.size;
    const deadline = Date.now() + 30_000;
    while (toPost.length < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    toPost.sort((a, b) => a - b);
    fromReply.sort((a, b) => a - b);
    console.log(
      `Receiving: ${fmt(sent / seconds, 0)} messages/s received (250), ${toPost.length} of ${sent} posted, failed ${failed}; start of transaction → POST p50 ${fmt(pct(toPost, 50))} ms, p99 ${fmt(pct(toPost, 99))} ms; 250 → POST p50 ${fmt(pct(fromReply, 50))} ms, p99 ${fmt(pct(fromReply, 99))} ms (${connections} pooled connections, ${seconds} s)`,
    );
    console.log(`service after the run: ${await memoryOf(child)}`);
    return { per_s: sent / seconds, failed };
  } finally {
    await child.stop();
    sink.close();
    await dns.stop();
  }
}
