// An HTTPS server on loopback answering https://mta-sts.<domain>/.well-known/mta-sts.txt by Host (MTA-STS tests), and
// taking POSTs (TLS reports to an `https:` rua): each request's path, headers and body kept.
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export const stsPolicy = (mode: string, mx: string, maxAge = 86400) =>
  `version: STSv1\r\nmode: ${mode}\r\nmx: ${mx}\r\nmax_age: ${maxAge}\r\n`;

export interface Posted {
  host: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export class PolicyServer {
  readonly policies = new Map<string, string>();
  readonly hits = new Map<string, number>();
  readonly posts: Posted[] = [];
  /** every policy request answered 500 (a failed fetch) */
  failing = false;
  port = 0;
  private server!: https.Server;
  async start(cert: { key: string; cert: string }): Promise<this> {
    this.server = https.createServer(cert, (req, res) => {
      const host = String(req.headers.host).replace(/:\d+$/, '');
      if (req.method === 'POST') {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          this.posts.push({ host, path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
          res.writeHead(201).end();
        });
        return;
      }
      const domain = host.replace(/^mta-sts\./, '');
      this.hits.set(domain, (this.hits.get(domain) ?? 0) + 1);
      const text = this.policies.get(domain);
      if (this.failing || !text || req.url !== '/.well-known/mta-sts.txt') return res.writeHead(500).end();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(text);
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }
  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}
