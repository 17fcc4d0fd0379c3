// A real HTTP receiver on 127.0.0.1 (port 0) for webhook tests: records every request and answers
// with the status a test chooses per request; waitFor(n) resolves once n requests have arrived. verify() checks
// the signature, then the payload against the document's `webhooks` (test/helpers/contract.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { assertWebhookDescribed, webhookContract } from '../helpers/contract.js';

export interface Received {
  headers: Record<string, string>;
  body: string;
  json: any;
  at: number;
}

export class Receiver {
  readonly got: Received[] = [];
  /** Status to answer for the n-th request (0-based). */
  respond: (n: number, r: Received) => number | Promise<number> = () => 200;
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const r: Received = {
        headers: req.headers as Record<string, string>,
        body,
        json: safeJson(body),
        at: Date.now(),
      };
      const answer = this.respond(this.got.length, r);
      this.got.push(r);
      this.waiters = this.waiters.filter((w) => !w());
      const status = await answer;
      if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain' }).end(`answer ${status}`);
    });
  });
  private waiters: (() => boolean)[] = [];
  /** TCP connections the receiver accepted (keep-alive makes it fewer than requests). */
  connections = 0;

  async start(): Promise<this> {
    this.server.on('connection', () => {
      this.connections++;
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    return this;
  }
  get port() {
    return (this.server.address() as AddressInfo).port;
  }
  get url() {
    return `http://127.0.0.1:${this.port}/hook`;
  }
  stop() {
    return new Promise<void>((r) => {
      this.server.close(() => r());
      this.server.closeAllConnections();
    });
  }

  /** Resolves when at least n requests arrived; rejects after timeoutMs. */
  waitFor(n: number, timeoutMs = 5000): Promise<Received[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.got.length >= n) {
          clearTimeout(t);
          resolve(this.got.slice());
          return true;
        }
        return false;
      };
      const t = setTimeout(() => reject(new Error(`receiver got ${this.got.length} of ${n} requests`)), timeoutMs);
      if (!check()) this.waiters.push(check);
    });
  }
}

function safeJson(s: string) {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

/** Verifies a delivery with the Standard Webhooks library; returns the parsed payload or throws. */
/** The payload, once its signature is verified with `secret`; a payload off the document's `webhooks` throws. */
export const verify = (secret: string, r: Received) => {
  const payload = new Webhook(secret).verify(r.body, r.headers) as any;
  assertWebhookDescribed(webhookContract(), payload);
  return payload;
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
