// Issue 32, item 1: the Stripe model on every dashboard page and action. A session signed in with a test key
// sees and acts on test-mode emails only (queue, overview, delivery, emails, an email's page and timeline);
// the team's live mail waiting in the queue is invisible to it and hold/release/cancel/retry leave it unchanged.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { FormClient } from '../helpers/form-client.js';
import { bumpStat } from '../../src/store/stats.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { runSync } from '../../src/store/op.js';

const LIVE_RCPT = 'live-secret@rcpt.test';
const TEST_RCPT = 'test-visible@rcpt.test';

describe('security: a test key signed in to the dashboard sees and changes test-mode mail only', function () {
  this.timeout(30_000);
  let s: TestService;
  let live: string;
  let test: string;
  let liveId: string;
  let testId: string;

  const held = (id: string) =>
    s.db
      .prepare(
        'SELECT count(*) FROM deliveries d JOIN emails e ON e.seq = d.email_seq WHERE e.id = ? AND d.held_at IS NOT NULL',
      )
      .pluck()
      .get(id) as number;
  const status = (id: string) => s.db.prepare('SELECT status FROM emails WHERE id = ?').pluck().get(id) as string;

  /** Scheduled an hour ahead: the email waits in the queue (state `scheduled`) for the whole test. */
  const send = async (key: string, to: string, subject: string) => {
    const at = new Date(Date.now() + 3600e3).toISOString();
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@shop.test', to, subject, text: 't', scheduled_at: at },
    });
    expect(r.status).to.equal(202);
    return r.body.id as string;
  };

  before(async () => {
    s = await startTestService({ features: [dashboard], env: { MTA_RATE_LIMIT: '0' } });
    const team = s.team();
    live = s.key(team.id, 'live', ['emails:send', 'emails:read']);
    test = s.key(team.id, 'test', ['emails:send', 'emails:read']);
    insertVerifiedDomain(s.db, team.id, 'shop.test');
    s.credits(team.id, 10);
    liveId = await send(live, LIVE_RCPT, 'live subject');
    testId = await send(test, TEST_RCPT, 'test subject');
    // Live counters the Overview of a test session must not show (a number no test email makes).
    runSync(bumpStat(s.db, team.id, 0, Math.floor(Date.now() / 3600e3) * 3600e3, 'delivered', 77));
  });
  after(() => s.close());

  it('shows no trace of the live email on any page; its own pages are 404', async () => {
    const b = new FormClient(s.url);
    expect((await b.signIn(test)).status).to.equal(303);
    const queue = await b.req('GET', '/dashboard/queue');
    expect(queue.status).to.equal(200);
    expect(queue.text).to.contain(TEST_RCPT).and.contain(testId);
    expect(queue.text, 'queue').to.not.contain(LIVE_RCPT).and.not.contain(liveId);
    for (const p of ['/dashboard/overview', '/dashboard/overview?range=30d', '/dashboard/emails']) {
      const r = await b.req('GET', p);
      expect(r.status, p).to.equal(200);
      expect(r.text, p).to.not.contain(liveId).and.not.contain(LIVE_RCPT).and.not.contain('live subject');
      expect(r.text, p).to.not.match(/data-stat="delivered">\s*77/);
    }
    for (const p of [
      '/dashboard/delivery',
      '/dashboard/stats',
      `/dashboard/emails/${liveId}`,
      `/dashboard/emails/${liveId}/timeline`,
    ]) {
      const r = await b.req('GET', p);
      expect(r.status, p).to.equal(404);
      expect(r.text, p).to.not.contain(LIVE_RCPT);
    }
    // The API agrees: the same key cannot see it.
    expect((await s.api('GET', `/v1/emails/${liveId}`, { key: test })).status).to.equal(404);
  });

  it('hold, release, cancel and retry of the live email match nothing and change nothing', async () => {
    const b = new FormClient(s.url);
    await b.signIn(test);
    const csrf = b.csrf((await b.req('GET', '/dashboard/queue')).text);
    let r = await b.req('POST', `/dashboard/queue/emails/${liveId}/hold`, { _csrf: csrf });
    expect(r.status).to.equal(303);
    expect(r.location).to.contain('matched=0');
    expect(held(liveId), 'the live email is not held').to.equal(0);

    // Held by the live key's session (which sees both modes, as the API's live key does) …
    const liveSession = new FormClient(s.url);
    await liveSession.signIn(live);
    const livePage = await liveSession.req('GET', '/dashboard/queue');
    expect(livePage.text).to.contain(LIVE_RCPT).and.contain(TEST_RCPT);
    r = await liveSession.req('POST', `/dashboard/queue/emails/${liveId}/hold`, {
      _csrf: liveSession.csrf(livePage.text),
    });
    expect(r.location).to.contain('matched=1');
    expect(held(liveId)).to.equal(1);
    // … the test session cannot release it, nor cancel or retry it.
    r = await b.req('POST', `/dashboard/queue/emails/${liveId}/release`, { _csrf: csrf });
    expect(r.status).to.equal(303);
    expect(r.location).to.contain('matched=0');
    expect(held(liveId), 'still held').to.equal(1);
    expect((await b.req('POST', `/dashboard/queue/emails/${liveId}/cancel`, { _csrf: csrf })).status).to.equal(404);
    expect((await b.req('POST', `/dashboard/emails/${liveId}/cancel`, { _csrf: csrf })).status).to.equal(404);
    expect((await b.req('POST', `/dashboard/queue/emails/${liveId}/retry`, { _csrf: csrf })).status).to.equal(404);
    expect(status(liveId)).to.equal('queued');
    expect(held(liveId)).to.equal(1);

    // Its own test email it holds and releases as before.
    r = await b.req('POST', `/dashboard/queue/emails/${testId}/hold`, { _csrf: csrf });
    expect(r.location).to.contain('matched=1');
    r = await b.req('POST', `/dashboard/queue/emails/${testId}/release`, { _csrf: csrf });
    expect(r.location).to.contain('matched=1');
    expect(held(testId)).to.equal(0);
  });
});
