// Loopback set-up of the transport-security tests (MTA-STS, DANE, TLS reports): a CA made here; the service with the
// outbound feature reading policies through the store on every resolve (stsMemoMs 0), its test MX on 127.0.0.1
// holding a certificate of the CA for the names asked; an HTTPS policy server (PolicyServer) with one for the policy
// hosts; an MX on 127.0.0.2 whose certificate names another host and one without STARTTLS on 127.0.0.3 (same port).
import type { Leaf } from './test-ca.js';
import { TestCa } from './test-ca.js';
import { TestMx, type Received } from './smtp-mx.js';
import { PolicyServer } from './policy-server.js';
import { outboundEnv, sleep, type OutboundEnv } from '../integration/outbound-env.js';
import { createOutbound } from '../../src/outbound/index.js';

export interface TlsEnv {
  e: OutboundEnv;
  ca: TestCa;
  web: PolicyServer;
  /** the certificate of the MX on 127.0.0.1 (the names asked) and of the one on 127.0.0.2 (nobody.example) */
  good: Leaf;
  other: Leaf;
  wrongMx: TestMx;
  plainMx: TestMx;
  /** every message the three MXs received */
  messages(): Received[];
  /** `domain` publishes an MTA-STS policy: `_mta-sts` TXT id=1, its policy host on 127.0.0.1, `policy` served there. */
  sts(domain: string, policy: string): void;
  /** The first event of `type` of email `id`, waited for. */
  eventOf(id: string, type: string, ms?: number): Promise<any>;
  close(): Promise<void>;
}

export async function tlsEnv(opts: {
  /** names on the certificate of the MX on 127.0.0.1 */
  mxNames: string[];
  /** names on the policy server's certificate */
  webNames: string[];
  env?: Record<string, string>;
  /** the MXs send the CA after their certificate (the chain a DANE-TA(2) server sends) */
  chain?: boolean;
}): Promise<TlsEnv> {
  const ca = new TestCa();
  const good = ca.leaf(opts.mxNames);
  const other = ca.leaf(['nobody.example']);
  const withChain = (l: Leaf) => (opts.chain ? { key: l.key, cert: l.cert + ca.caPem } : l);
  const web = await new PolicyServer().start(ca.leaf(opts.webNames));
  const e = await outboundEnv({
    mxCert: withChain(good),
    env: { MTA_TLS_CA_FILE: ca.caFile, MTA_STS_HTTPS_PORT: String(web.port), ...opts.env },
    features: [(ctx) => ({ components: [createOutbound(ctx, {}, { stsMemoMs: 0 })] })],
  });
  const wrongMx = await new TestMx({ host: '127.0.0.2', port: e.mx.port, ...withChain(other) }).start();
  const plainMx = await new TestMx({ host: '127.0.0.3', port: e.mx.port, tls: false }).start();
  return {
    e,
    ca,
    web,
    good,
    other,
    wrongMx,
    plainMx,
    messages: () => [...e.mx.messages, ...wrongMx.messages, ...plainMx.messages],
    sts(domain, policy) {
      e.dns.set(`_mta-sts.${domain}`, { TXT: ['v=STSv1; id=1'] });
      e.dns.set(`mta-sts.${domain}`, { A: ['127.0.0.1'] });
      web.policies.set(domain, policy);
    },
    async eventOf(id, type, ms = 8000) {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        const ev = (await e.events(id)).find((x: any) => x.type === type);
        if (ev) return ev;
        await sleep(30);
      }
      throw new Error(`no ${type} event for ${id}: ${JSON.stringify(await e.events(id))}`);
    },
    async close() {
      await e.close();
      await wrongMx.stop();
      await plainMx.stop();
      await web.stop();
    },
  };
}
