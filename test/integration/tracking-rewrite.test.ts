// Audit finding 1 (tracking part): rewriting the links of an html holding 100,000 `<a ` is linear, so a
// live send with click tracking is delivered quickly and /healthz keeps answering meanwhile.
import { expect } from 'chai';
import { simpleParser } from 'mailparser';
import { outboundEnv, type OutboundEnv } from './outbound-env.js';

describe('tracking: link rewrite of a hostile html through the API', function () {
  this.timeout(30_000);
  let e: OutboundEnv;
  before(async () => {
    e = await outboundEnv();
  });
  after(() => e.close());

  it('delivers 100,000 `<a ` with click tracking in under 2 s while /healthz answers', async () => {
    const html = `<p><a href="https://shop.example/first">first</a>${'<a '.repeat(100_000)}</p>`;
    const t0 = Date.now();
    const sent = await e.send({ to: ['r@rcpt.test'], html, tracking: { clicks: true } });
    let polling = true;
    const health: number[] = [];
    const poll = (async () => {
      while (polling) {
        const t = Date.now();
        const r = await fetch(`${e.s.url}/healthz`);
        expect(r.status).to.equal(200);
        health.push(Date.now() - t);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await e.waitStatus(sent.id, ['delivered'], 10_000);
    const ms = Date.now() - t0;
    polling = false;
    await poll;
    expect(ms).to.be.below(2000);
    expect(Math.max(...health)).to.be.below(500);
    const p = await simpleParser(e.mx.to('r@rcpt.test')[0].raw);
    expect(p.html).to.match(/<p><a href="http:\/\/127\.0\.0\.1:3000\/t\/c\/[A-Za-z0-9_.-]+">first<\/a><a <a /);
  });
});
