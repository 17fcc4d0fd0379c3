// Shared set-up for the outbound tests: TestDns with the zones, a scriptable MX on 127.0.0.1:port 0
// (MTA_OUTBOUND_PORT), the service with the outbound feature, a live key and a verified DKIM domain.
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { TestDns } from '../helpers/dns.js';
import { TestMx, type MxScript } from '../helpers/smtp-mx.js';
import { startTestService, tempDir, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { feature as outbound } from '../../src/features/outbound.js';
import type { FeatureFactory } from '../../src/service.js';
import type { Config } from '../../src/config/schema.js';

export interface OutboundEnv {
  dns: TestDns;
  mx: TestMx;
  s: TestService;
  live: string;
  test: string;
  teamId: string;
  selector: string;
  send(body: Record<string, unknown>, key?: string): Promise<any>;
  waitStatus(id: string, statuses: string[], ms?: number, key?: string): Promise<any>;
  events(id: string, key?: string): Promise<any[]>;
  close(): Promise<void>;
}

export const SENDER = 'sender.test';

/** Publishes `name` → MX mx.<name> → 127.0.0.1 (the test MX). */
export function route(dns: TestDns, name: string, ip = '127.0.0.1'): void {
  dns.set(name, { MX: [{ exchange: `mx.${name}`, priority: 10 }] });
  dns.set(`mx.${name}`, { A: [ip] });
}

/** Writes an operator shaping file (MTA_SHAPING_FILE) for a test; returns its path. */
export function shapingFile(rules: Record<string, unknown>): string {
  const file = path.join(tempDir('mta-shaping-'), 'shaping.json');
  fs.writeFileSync(file, JSON.stringify(rules));
  return file;
}

export async function outboundEnv(
  opts: {
    env?: Record<string, string>;
    overrides?: Partial<Config>;
    script?: MxScript;
    mxTls?: boolean;
    /** the test MX's STARTTLS certificate (PEM; default smtp-server's self-signed one) */
    mxCert?: { key: string; cert: string };
    features?: FeatureFactory[];
    shaping?: Record<string, unknown>;
    /** the service's clock (testClock().now), for tests that move time */
    now?: () => number;
    /** PostgreSQL: the service's pool of asynchronous plans (0: none, the loop's claims synchronous) */
    pgPoolSize?: number;
  } = {},
): Promise<OutboundEnv> {
  const dns = await new TestDns().start();
  const overrides = opts.shaping ? { ...opts.overrides, shapingFile: shapingFile(opts.shaping) } : opts.overrides;
  const mx = await new TestMx({ script: opts.script, tls: opts.mxTls, ...opts.mxCert }).start();
  const s = await startTestService({
    features: opts.features ?? [outbound],
    now: opts.now,
    pgPoolSize: opts.pgPoolSize,
    overrides,
    env: {
      MTA_DNS_SERVERS: dns.server,
      MTA_OUTBOUND_PORT: String(mx.port),
      // 5 s per SMTP command, and a lease of 5 s (MTA_RETRY_MAX_SECONDS caps it) so that a transaction has 4 s
      // (outbound/index.ts timings). With 1 s and 2 s, a loaded box (the concurrent test runner) made a transaction
      // outlast its time-out after the MX had taken the message, and the retry was a second copy at the MX. Not
      // more: MTA_RETRY_MAX_SECONDS is also the longest wait for a retry, which tests that fix something and wait
      // for the next attempt rely on (10 s made outbound-mta-sts's operator override miss its 8 s window). A test
      // about time-outs or stalls sets its own.
      MTA_OUTBOUND_TIMEOUT_SECONDS: '5',
      MTA_RETRY_MIN_SECONDS: '0.2',
      MTA_RETRY_MAX_SECONDS: '5',
      MTA_QUEUE_LIFETIME_SECONDS: '60',
      MTA_RATE_LIMIT: '0',
      ...(opts.env ?? {}),
    },
  });
  const team = s.team();
  const live = s.key(team.id, 'live', ['emails:send', 'emails:read']);
  const test = s.key(team.id, 'test', ['emails:send', 'emails:read']);
  const dom = insertVerifiedDomain(s.db, team.id, SENDER);
  dns.set(`${dom.selector}._domainkey.${SENDER}`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
  for (const d of ['rcpt.test', 'other.test']) route(dns, d);
  const env: OutboundEnv = {
    dns,
    mx,
    s,
    live,
    test,
    teamId: team.id,
    selector: dom.selector,
    async send(body, key = live) {
      const r = await s.api('POST', '/v1/emails', {
        key,
        body: { from: `Sender <app@${SENDER}>`, subject: 'Hello', text: 'Hi there', ...body },
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      return r.body;
    },
    async waitStatus(id, statuses, ms = 8000, key = live) {
      const until = Date.now() + ms;
      let last: any;
      while (Date.now() < until) {
        last = (await s.api('GET', `/v1/emails/${id}`, { key })).body;
        if (statuses.includes(last.status)) return last;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(
        `email ${id} did not reach ${statuses.join('|')}: ${JSON.stringify(last)} events=${JSON.stringify(await env.events(id, key))}`,
      );
    },
    async events(id, key = live) {
      return (await s.api('GET', `/v1/emails/${id}/events?limit=100`, { key })).body.data;
    },
    async close() {
      await s.close();
      await mx.stop();
      await dns.stop();
    },
  };
  return env;
}

/** An MX script by local part: `unknown…` refused (550 5.1.1), `slow…` deferred (451) on its first try only. */
export function unknownAndSlow(): MxScript {
  const tries = new Map<string, number>();
  return {
    rcpt: (to) => {
      if (to.startsWith('unknown')) return { code: 550, message: '5.1.1 No such user' };
      if (to.startsWith('slow')) {
        const n = (tries.get(to) ?? 0) + 1;
        tries.set(to, n);
        if (n === 1) return { code: 451, message: '4.3.0 Try again later' };
      }
      return undefined;
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
