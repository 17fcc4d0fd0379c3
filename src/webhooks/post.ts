// One webhook POST over node:http(s): never follows redirects, connects only to addresses the guard
// accepted, gives up after the timeout, keeps a short escaped excerpt of the answer. Never throws.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { isBlockedIp, METADATA_NAMES } from '../core/webhook-address.js';

export interface PostResult {
  statusCode: number | null;
  snippet: string | null;
  error: string | null;
  durationMs: number;
  /** The guard refused the destination: retrying will not help. */
  blocked: boolean;
  /** The request was aborted because the dispatcher is stopping: not an attempt. */
  aborted: boolean;
}

export interface PostOptions {
  timeoutMs: number;
  signal: AbortSignal;
  userAgent: string;
  agents?: Agents;
  /** The guarded lookup (null: no guard, tests only); `allowPrivate` must match the one it was made with. */
  lookup: LookupFunction | null;
  allowPrivate?: boolean;
}

/**
 * Keep-alive agents, one per origin. Safe with the SSRF guard: the guarded lookup runs when a socket
 * connects, so a reused socket stays on the address that was checked.
 */
export class Agents {
  private byOrigin = new Map<string, http.Agent>();
  for(url: URL): http.Agent {
    let a = this.byOrigin.get(url.origin);
    if (!a) {
      const o = { keepAlive: true, maxSockets: 8, timeout: 30_000 };
      a = url.protocol === 'https:' ? new https.Agent(o) : new http.Agent(o);
      this.byOrigin.set(url.origin, a);
    }
    return a;
  }
  destroy(): void {
    for (const a of this.byOrigin.values()) a.destroy();
    this.byOrigin.clear();
  }
}

/** How much of an answer the delivery log keeps: enough to recognise an error page, not to read a document. */
export const SNIPPET_CHARS = 256;
const READ_BYTES = 1024;

/**
 * The first SNIPPET_CHARS characters of an answer with every control, line-separator and bidi-override
 * character escaped (\n, \x1b, \u202e…), and "…" when cut. Null for an empty answer.
 */
export function excerpt(text: string): string | null {
  const chars = [...text];
  const cut = chars.length > SNIPPET_CHARS;
  const escaped = chars
    .slice(0, SNIPPET_CHARS)
    .join('')
    .replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => {
      const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
      const code = c.charCodeAt(0);
      return (
        named[c] ??
        (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`)
      );
    });
  return escaped ? escaped + (cut ? '…' : '') : null;
}

export function postWebhook(
  rawUrl: string,
  headers: Record<string, string>,
  body: string,
  o: PostOptions,
): Promise<PostResult> {
  const start = process.hrtime.bigint();
  const ms = () => Math.round(Number(process.hrtime.bigint() - start) / 1e6);
  const result = (r: Partial<PostResult>): PostResult => ({
    statusCode: null,
    snippet: null,
    error: null,
    blocked: false,
    aborted: false,
    durationMs: ms(),
    ...r,
  });
  const url = new URL(rawUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (o.lookup && net.isIP(host) && isBlockedIp(host, o.allowPrivate === true))
    return Promise.resolve(result({ error: 'destination address refused', blocked: true }));
  if (o.lookup && METADATA_NAMES.test(host))
    return Promise.resolve(result({ error: `${host} is a cloud metadata service: refused`, blocked: true }));
  return new Promise<PostResult>((resolve) => {
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const signal = AbortSignal.any([timeout, o.signal]);
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(
      url,
      {
        method: 'POST',
        signal,
        agent: o.agents ? o.agents.for(url) : false,
        ...(o.lookup ? { lookup: o.lookup } : {}),
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': o.userAgent,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < READ_BYTES) chunks.push(c);
          size += c.length;
          if (size > 64 * 1024) res.destroy(); // enough: we only keep a snippet
        });
        const done = () =>
          resolve(
            result({
              statusCode: res.statusCode ?? null,
              snippet: excerpt(Buffer.concat(chunks).subarray(0, READ_BYTES).toString('utf8')),
            }),
          );
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    req.on('error', (err: Error & { code?: string }) => {
      if (o.signal.aborted) return resolve(result({ error: 'dispatcher stopping', aborted: true }));
      if (timeout.aborted) return resolve(result({ error: `timed out after ${o.timeoutMs} ms` }));
      resolve(result({ error: describe(err), blocked: err.code === 'EBLOCKED' }));
    });
    req.end(body);
  });
}

function describe(err: Error & { code?: string }): string {
  const msg = err.code && !err.message.includes(err.code) ? `${err.code}: ${err.message}` : err.message;
  return msg.slice(0, 300);
}
