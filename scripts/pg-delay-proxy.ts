// A TCP proxy on 127.0.0.1 (port 0) that holds every chunk for BENCH_PG_DELAY_MS in each direction: PostgreSQL one hop
// away for the benches (bench-lib.ts starts it when BENCH_PG_DELAY_MS is set; BENCHMARKS.md, issue 38).
//   node --import tsx scripts/pg-delay-proxy.ts <host:port> <ms each way>
// Prints `port=N` on stdout once listening. Each direction is one FIFO per connection (order kept) drained by a single
// timer (not one setTimeout per chunk). Node's timers count whole milliseconds, so a chunk is sent at the first timer
// tick at or after its due time less SLACK_MS: the hold is about the asked delay, never much more; the bench measures it
// (SELECT 1 through the proxy) and the proxy reports the holds it applied: a line `stats` on stdin answers one JSON line.
// It exits when its stdin closes (the bench is gone).
import net from 'node:net';

const [target, ms] = process.argv.slice(2);
const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
const DELAY = Number(ms);
const SLACK_MS = 0.25;
const holds: number[] = []; // ms each chunk was held (a sample: the last 100,000)
let chunks = 0;

/** One direction of one connection: chunks (or the end) wait DELAY ms, in order, then go to `out`. */
class DelayLine {
  private queue: { due: number; chunk: Buffer | null; at: number }[] = [];
  private timer: NodeJS.Timeout | null = null;
  constructor(private out: net.Socket) {}

  push(chunk: Buffer | null): void {
    const at = performance.now();
    if (DELAY <= 0 && this.queue.length === 0) return this.send(chunk, at);
    this.queue.push({ due: at + DELAY, chunk, at });
    if (!this.timer) this.arm();
  }

  private send(chunk: Buffer | null, at: number): void {
    if (chunk === null) return void this.out.end();
    if (this.out.destroyed) return;
    this.out.write(chunk);
    chunks++;
    holds[chunks % 100_000] = performance.now() - at;
  }

  private arm(): void {
    const wait = this.queue[0].due - performance.now() - SLACK_MS;
    this.timer = setTimeout(() => this.flush(), Math.max(0, Math.ceil(wait)));
  }

  private flush(): void {
    this.timer = null;
    const now = performance.now();
    let i = 0;
    while (i < this.queue.length && this.queue[i].due - SLACK_MS <= now) {
      this.send(this.queue[i].chunk, this.queue[i].at);
      i++;
    }
    this.queue.splice(0, i);
    if (this.queue.length > 0) this.arm();
  }
}

const server = net.createServer((client) => {
  const upstream = net.connect(port, host);
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  const up = new DelayLine(upstream);
  const down = new DelayLine(client);
  client.on('data', (c) => up.push(c));
  client.on('end', () => up.push(null));
  upstream.on('data', (c) => down.push(c));
  upstream.on('end', () => down.push(null));
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', () => upstream.end());
  upstream.on('close', () => client.end());
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`port=${(server.address() as net.AddressInfo).port}\n`);
});

let input = '';
process.stdin.on('data', (d) => {
  input += d;
  let nl: number;
  while ((nl = input.indexOf('\n')) >= 0) {
    if (input.slice(0, nl).trim() === 'stats') {
      const s = holds.filter((x) => x !== undefined).sort((a, b) => a - b);
      const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
      const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
      process.stdout.write(`${JSON.stringify({ chunks, mean, p50: q(0.5), p90: q(0.9), p99: q(0.99) })}\n`);
    }
    input = input.slice(nl + 1);
  }
});
process.stdin.on('end', () => process.exit(0));
