// Issue 38 item 3 (docs/async-store.md "Session 22"): with the pool and MTA_PG_POOLED_TURNS on, a node that accepts
// and delivers sends nothing on its synchronous PostgreSQL connection, each of whose round trips would hold the event
// loop: the accepts, API key reads, the delivery loop's claims and results, the signing key (read again every second),
// the tracking secret, a message's attachments and the delivery controller's once-a-second reads and writes all go
// to the pool. Counted by the synchronous client itself (storeCounters), over a window with emails accepted and
// delivered, two controller ticks and a signing key's re-read in it. The test's own waiting watches the MX, not the
// API. Since the flip (session 23: runPlan on the pool) the API's other requests, the dashboard's pages (the operator's
// queue summary among them) and tracking hits send nothing there either. PostgreSQL only (MTA_TEST_ENGINE=pg).
import { expect } from 'chai';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { testEngine } from '../helpers/service.js';
import { FormClient } from '../helpers/form-client.js';
import { storeCounters } from '../../src/store/db.js';
import { emailByPublicId } from '../../src/store/emails.js';
import { runSync } from '../../src/store/op.js';
import { applyTracking } from '../../src/services/tracking.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as webhooks } from '../../src/features/webhooks.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { domainRoutes } from '../../src/http/routes/domains.js';
import { adminMount } from '../../src/http/admin/index.js';
import type { FeatureFactory } from '../../src/service.js';

const delivered = async (e: OutboundEnv, n: number) => {
  for (const until = Date.now() + 20_000; e.mx.messages.length < n && Date.now() < until;) await sleep(20);
  expect(e.mx.messages.length).to.equal(n);
};

describe('PostgreSQL: nothing on the synchronous connection while the node accepts and delivers', function () {
  this.timeout(60_000);
  before(function () {
    if (testEngine() !== 'pg') this.skip();
  });

  it('sends no statement there in steady state (pool and pooled turns on)', async () => {
    const e = await outboundEnv({ pgPoolSize: 4 });
    const html = '<p>Hello <a href="https://example.com/x">there</a></p>';
    const attachments = [{ filename: 'a.txt', content: Buffer.from('attached').toString('base64') }];
    try {
      await e.send({ to: 'first@rcpt.test', html, tracking: { opens: true, clicks: true }, attachments });
      await delivered(e, 1);
      await sleep(1200); // the controller's first ticks (its restore at start is synchronous)
      const before = storeCounters(e.s.db)!.statements;
      for (let i = 0; i < 10; i++)
        await e.send({
          to: `n${i}@rcpt.test`,
          html,
          tracking: { opens: true, clicks: true },
          ...(i % 2 ? { attachments } : {}),
        });
      await delivered(e, 11);
      await sleep(2200); // two more ticks; the signing key read again (1 s on PostgreSQL), the API key (2 s)
      await e.send({ to: 'last@rcpt.test', html, tracking: { opens: true, clicks: true }, attachments });
      await delivered(e, 12);
      expect(storeCounters(e.s.db)!.statements - before, 'statements on the synchronous connection').to.equal(0);
      expect(e.mx.messages.at(-1)!.raw.toString(), 'its attachment').to.include('a.txt');
    } finally {
      await e.close();
    }
  });

  // The domains routes and the operator API without their jobs (whose session locks stay on that connection).
  const domainsApi: FeatureFactory = () => ({ routes: [domainRoutes] });
  const adminApi: FeatureFactory = () => ({ mounts: [adminMount] });
  const PASSWORD = 'correct horse battery staple';
  const ADMIN = 'admin-token-for-the-sync-idle-test';

  it("sends none there for the API's reads, the dashboard and tracking hits (runPlan on the pool)", async () => {
    const e = await outboundEnv({
      pgPoolSize: 4,
      features: [outbound, webhooks, domainsApi, adminApi, dashboard],
      env: { MTA_DASHBOARD_PASSWORD: PASSWORD, MTA_ADMIN_TOKEN: ADMIN },
    });
    const html = '<html><body><p>Hello <a href="https://example.com/x">there</a></p></body></html>';
    try {
      const key = e.s.key(e.teamId, 'live', ['emails:send', 'emails:read', 'domains:read', 'webhooks:write']);
      const sent = await e.send({ to: 'first@rcpt.test', html, tracking: { opens: true, clicks: true } });
      await e.send({ to: 'later@rcpt.test', scheduled_at: new Date(Date.now() + 3600e3).toISOString() });
      await delivered(e, 1);
      // What the window reads is set up before it (on the synchronous connection, as tests do).
      const row = runSync(emailByPublicId(e.s.db, sent.id))!;
      const tracked = applyTracking({ ...e.s.ctx, config: { ...e.s.ctx.config, publicUrl: e.s.url } }, row, html);
      const pixel = /<img src="([^"]+)"/.exec(tracked)![1];
      const click = /href="([^"]+\/t\/c\/[^"]+)"/.exec(tracked)![1];
      const teamName = e.s.db.prepare('SELECT name FROM teams WHERE id = ?').pluck().get(e.teamId) as string;
      const team = new FormClient(e.s.url);
      expect((await team.signIn(key)).status).to.equal(303);
      const operator = new FormClient(e.s.url);
      expect((await operator.signInWith({ password: PASSWORD, team: teamName })).status).to.equal(303);
      await sleep(1200); // the controller's first ticks (its restore at start is synchronous)

      const before = storeCounters(e.s.db)!.statements;
      const get = async (path: string) => {
        const r = await e.s.api('GET', path, { key });
        expect(r.status, `${path}: ${JSON.stringify(r.body)}`).to.equal(200);
        return r.body;
      };
      expect((await get('/v1/emails?limit=10')).data).to.have.length(2);
      expect((await get(`/v1/emails/${sent.id}`)).id).to.equal(sent.id);
      expect((await get(`/v1/emails/${sent.id}/events`)).data.length).to.be.above(0);
      expect((await get('/v1/domains')).data.map((d: { name: string }) => d.name)).to.include('sender.test');
      expect((await get('/v1/webhooks')).data).to.deep.equal([]);
      expect((await get('/v1/suppressions')).data).to.deep.equal([]);
      const summary = await fetch(`${e.s.url}/admin/v1/queue/summary?by=state`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(summary.status).to.equal(200);
      expect(((await summary.json()) as { groups: { key: string }[] }).groups.map((g) => g.key)).to.include(
        'scheduled',
      );
      const overview = await team.req('GET', '/dashboard/overview');
      expect(overview.status).to.equal(200);
      expect(overview.text, 'the team in the header').to.contain(teamName);
      const queue = await operator.req('GET', '/dashboard/queue');
      expect(queue.status).to.equal(200);
      expect(queue.text, 'the queue summary').to.contain('later@rcpt.test');
      expect((await fetch(pixel)).status).to.equal(200);
      expect((await fetch(click, { redirect: 'manual' })).status).to.equal(302);
      const types = async () =>
        ((await get(`/v1/emails/${sent.id}/events`)).data as { type: string }[]).map((x) => x.type);
      expect(await types()).to.include.members(['opened', 'clicked']);
      expect(storeCounters(e.s.db)!.statements - before, 'statements on the synchronous connection').to.equal(0);
    } finally {
      await e.close();
    }
  });
});
