// Shared set-up for the SMTP submission tests: the outbound environment (TestDns, loopback MX, verified DKIM domain)
// with the submission listener on 127.0.0.1 port 0, a nodemailer transport for it, and byte-level checks.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import { expect } from 'chai';
import { dkimVerify } from 'mailauth';
import { outboundEnv, SENDER, type OutboundEnv } from './outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as submission } from '../../src/features/submission.js';
import { createResolver } from '../../src/services/resolver.js';

export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

export interface SubmissionEnv extends OutboundEnv {
  port: number;
  transport(key: string, opts?: Record<string, unknown>): Transporter;
}

/** The port of the `submission=` listener the running service announces. */
export function submissionPort(e: Pick<OutboundEnv, 's'>): number {
  const c = e.s.svc.components.find((x) => x.name === 'submission-smtp');
  const m = /submission=127\.0\.0\.1:(\d+)/.exec(c?.address?.() ?? '');
  if (!m) throw new Error('the submission listener is not running');
  return Number(m[1]);
}

export async function submissionEnv(env: Record<string, string> = {}): Promise<SubmissionEnv> {
  const e = await outboundEnv({ features: [outbound, submission], env });
  const port = submissionPort(e);
  return Object.assign(e, {
    port,
    transport: (key: string, opts: Record<string, unknown> = {}) =>
      nodemailer.createTransport({
        host: '127.0.0.1',
        port,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
        auth: { user: 'apikey', pass: key },
        ...opts,
      }),
  });
}

/** The body (after the header's blank line) of a message. */
export function bodyOf(raw: Buffer): Buffer {
  const i = raw.indexOf('\r\n\r\n');
  return raw.subarray(i + 4);
}

/** DKIM of a received message, checked against the test DNS: pass, signed by the sending domain. */
export async function expectDkimPass(e: OutboundEnv, raw: Buffer): Promise<void> {
  const r = createResolver({ dnsServers: [e.dns.server] });
  const v = await dkimVerify(raw, { resolver: (name: string, type: string) => r.resolve(name, type as 'TXT') as any });
  expect(v.results[0].status.result, JSON.stringify(v.results[0])).to.equal('pass');
  expect(v.results[0].signingDomain).to.equal(SENDER);
}

export async function waitFor<T>(what: string, fn: () => T | undefined, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Runs a Python 3 script (`python3 -c`) with `args` and `input` on stdin; its stdout parsed as JSON. */
export function runPython<T = any>(script: string, args: string[], input?: Buffer): Promise<T> {
  return new Promise((resolve, reject) => {
    const p = spawn('python3', ['-c', script, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => (out += c));
    p.stderr.on('data', (c) => (err += c));
    p.on('error', reject);
    p.on('close', (status) => (status === 0 ? resolve(JSON.parse(out)) : reject(new Error(`python3: ${err}`))));
    p.stdin.end(input);
  });
}
