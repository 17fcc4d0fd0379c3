import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { applyTracking } from '../../src/services/tracking.js';
import { emailByPublicId } from '../../src/store/emails.js';
import { Receiver, verify, sleep } from './webhooks-receiver.js';
import { runSync } from '../../src/store/op.js';

const HTML = `<html><body><p>Hi</p>
<a href="https://shop.example.com/item?id=1&amp;ref=mail">Item</a>
<a class="x" href='http://example.org/a'>A</a>
<a href="mailto:help@example.com">Mail us</a>
<a href="#top">Top</a>
</body></html>`;

describe('tracking: opens and clicks', function () {
  this.timeout(15_000);
  let s: TestService;
  let rx: Receiver;
  let key: string;
  let secret: string;
  before(async () => {
    s = await startTestService({ features: [webhooks] });
    key = s.key(s.team().id, 'test', ['emails:send', 'emails:read', 'webhooks:write']);
    rx = await new Receiver().start();
    secret = (await s.api('POST', '/v1/webhooks', { key, body: { url: rx.url, events: ['opened', 'clicked'] } })).body
      .secret;
  });
  after(async () => {
    await s.close();
    await rx.stop();
  });

  async function trackedHtml(tracking: { opens: boolean; clicks: boolean }) {
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@example.com', to: 'reader@example.org', subject: 's', html: HTML, tracking },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    const row = runSync(emailByPublicId(s.db, r.body.id))!;
    // The service listens on port 0: point the public URL at it.
    const ctx = { ...s.ctx, config: { ...s.ctx.config, publicUrl: s.url } };
    return { id: r.body.id as string, html: applyTracking(ctx, row, HTML) };
  }
  const events = async (id: string) => (await s.api('GET', `/v1/emails/${id}/events`, { key })).body.data as any[];
  const links = (html: string) => [...html.matchAll(/href=["']([^"']+)["']/g)].map((m) => m[1]);

  it('leaves html alone when tracking is off', async () => {
    const { html } = await trackedHtml({ opens: false, clicks: false });
    expect(html).to.equal(HTML);
  });

  it('records the first open only, from the 1×1 image', async () => {
    const { id, html } = await trackedHtml({ opens: true, clicks: false });
    const pixel = /<img src="([^"]+)"/.exec(html)![1];
    expect(pixel).to.match(new RegExp(`^${s.url}/t/o/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{22}\\.gif$`));
    expect(html.indexOf(pixel)).to.be.below(html.indexOf('</body>'));
    expect(links(html)).to.deep.equal(links(HTML));
    for (let i = 0; i < 3; i++) {
      const r = await fetch(pixel);
      expect(r.status).to.equal(200);
      expect(r.headers.get('content-type')).to.equal('image/gif');
      expect(
        Buffer.from(await r.arrayBuffer())
          .subarray(0, 6)
          .toString(),
      ).to.equal('GIF89a');
    }
    const opened = (await events(id)).filter((e) => e.type === 'opened');
    expect(opened).to.have.length(1);
    expect(opened[0]).to.include({ recipient: 'reader@example.org' });
    expect(opened[0].data).to.deep.equal({ source: 'tracking' });
    const [w] = await rx.waitFor(1);
    const p = verify(secret, w);
    expect(p).to.include({ type: 'opened', id: opened[0].id });
    expect(p.data.email.id).to.equal(id);
    expect(p.data.email.status).to.equal('queued'); // an open does not change the status
  });

  it('records a click per link (repeats within 10 minutes counted once) and redirects only to the link the email held', async () => {
    const { id, html } = await trackedHtml({ opens: false, clicks: true });
    const ls = links(html);
    expect(ls[2]).to.equal('mailto:help@example.com');
    expect(ls[3]).to.equal('#top');
    expect(ls[0]).to.match(new RegExp(`^${s.url}/t/c/`));
    expect(html).to.include(`class="x" href="${ls[1]}"`);
    for (const [link, target] of [
      [ls[0], 'https://shop.example.com/item?id=1&ref=mail'],
      [ls[0], 'https://shop.example.com/item?id=1&ref=mail'],
      [ls[1], 'http://example.org/a'],
    ]) {
      const r = await fetch(link, { redirect: 'manual' });
      expect(r.status).to.equal(302);
      expect(r.headers.get('location')).to.equal(target);
    }
    const head = await fetch(ls[0], { method: 'HEAD', redirect: 'manual' });
    expect(head.status).to.equal(302);
    const clicked = (await events(id)).filter((e) => e.type === 'clicked');
    expect(clicked.map((e) => e.data.url)).to.deep.equal([
      'https://shop.example.com/item?id=1&ref=mail',
      'http://example.org/a',
    ]);
    expect(clicked[0].data.source).to.equal('tracking');
    await sleep(200);
    const hooks = rx.got.map((r) => verify(secret, r)).filter((p) => p.type === 'clicked' && p.data.email.id === id);
    expect(hooks.map((p) => p.data.details.url)).to.have.length(2);
  });

  it('answers 404 to tampered or forged tokens, never redirecting', async () => {
    const { html } = await trackedHtml({ opens: true, clicks: true });
    const link = links(html)[0];
    const [, body, mac] = /\/t\/c\/([^.]+)\.(.+)$/.exec(link)!;
    const evil = Buffer.from(
      Buffer.from(body, 'base64url').toString().replace(/\n.*/, '\nhttps://evil.example/'),
    ).toString('base64url');
    const flipped = mac.slice(0, -1) + (mac.endsWith('A') ? 'B' : 'A');
    for (const bad of [
      `${s.url}/t/c/${evil}.${mac}`,
      `${s.url}/t/c/${body}.${flipped}`,
      `${s.url}/t/c/${body}`,
      `${s.url}/t/c/x.y`,
      `${s.url}/t/o/${body}.${mac}.gif`,
    ]) {
      const r = await fetch(bad, { redirect: 'manual' });
      expect(r.status, bad).to.equal(404);
      expect(r.headers.get('location')).to.equal(null);
    }
  });

  it('leaves a link too long for a tracking token untouched instead of breaking it', async () => {
    const long = `https://shop.example.com/p?q=${'x'.repeat(7000)}`;
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: {
        from: 'a@example.com',
        to: 'reader@example.org',
        subject: 's',
        html: `<a href="${long}">x</a><a href="https://e.example/">y</a>`,
        tracking: { opens: false, clicks: true },
      },
    });
    const ctx = { ...s.ctx, config: { ...s.ctx.config, publicUrl: s.url } };
    const out = applyTracking(
      ctx,
      runSync(emailByPublicId(s.db, r.body.id))!,
      `<a href="${long}">x</a><a href="https://e.example/">y</a>`,
    );
    const [first, second] = links(out);
    expect(second).to.match(/\/t\/c\//);
    expect(first).to.equal(long); // (never fetched: not a loopback address)
    const res = await fetch(second, { redirect: 'manual' });
    expect(res.status).to.equal(302);
  });
});
