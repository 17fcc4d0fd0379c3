// The dashboard Queue page over plain HTTP: an operator sees the summary by site, team and state and a bulk
// action only after a confirmation step; a team sees only its own waiting mail and can hold, release and cancel it.
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as dashboard } from '../../src/features/dashboard.js';

class Browserish {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}
  async req(method: string, path: string, form?: Record<string, string>) {
    const headers: Record<string, string> = { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const res = await fetch(this.base + path, {
      method,
      headers,
      body: form && new URLSearchParams(form),
      redirect: 'manual',
    });
    for (const c of res.headers.getSetCookie()) {
      const [k, v] = c.split(';')[0].split('=');
      if (v) this.cookies.set(k, v);
      else this.cookies.delete(k);
    }
    return { status: res.status, location: res.headers.get('location'), text: await res.text() };
  }
  csrf = (page: string) => /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
}

describe('dashboard Queue page', function () {
  this.timeout(30_000);
  let s: TestService;
  before(async () => {
    s = await startTestService({
      features: [dashboard],
      env: { MTA_RATE_LIMIT: '0', MTA_DASHBOARD_PASSWORD: 'correct horse battery' },
    });
  });
  after(() => s.close());

  const send = async (key: string, to: string[]) => {
    const at = new Date(Date.now() + 3600e3).toISOString();
    const r = await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@x.test', to, subject: 's', text: 't', scheduled_at: at },
    });
    expect(r.status).to.equal(202);
    return r.body.id as string;
  };

  it('a team sees only its own waiting mail and holds, releases and cancels it', async () => {
    const mine = s.team('queue-mine');
    const theirs = s.team('queue-theirs');
    const key = s.key(mine.id, 'test', ['emails:send', 'emails:read']);
    const id = await send(key, ['me@one.test']);
    const other = await send(s.key(theirs.id, 'test', ['emails:send']), ['secret@two.test']);
    const b = new Browserish(s.url);
    const login = await b.req('GET', '/dashboard/sign-in');
    await b.req('POST', '/dashboard/sign-in', { _csrf: b.csrf(login.text), key });
    let page = await b.req('GET', '/dashboard/queue');
    expect(page.status).to.equal(200);
    expect(page.text).to.contain('me@one.test').and.not.contain('secret@two.test').and.not.contain(other);
    expect(page.text).to.match(/href="\/dashboard\/queue"\s+aria-current="page"/);
    const csrf = b.csrf(page.text);
    let r = await b.req('POST', `/dashboard/queue/emails/${id}/hold`, { _csrf: csrf });
    expect(r.status).to.equal(303);
    page = await b.req('GET', r.location!);
    expect(page.text).to.contain('Held 1 recipients.').and.contain('data-state="held"');
    r = await b.req('POST', `/dashboard/queue/emails/${other}/hold`, { _csrf: csrf });
    expect((await b.req('GET', r.location!)).text, "another team's email is never touched").to.contain(
      'Held 0 recipients.',
    );
    r = await b.req('POST', `/dashboard/queue/emails/${id}/release`, { _csrf: csrf });
    expect((await b.req('GET', r.location!)).text).to.contain('Released 1 recipients.');
    r = await b.req('POST', `/dashboard/queue/emails/${id}/cancel`, { _csrf: csrf });
    expect(r.status).to.equal(303);
    expect((await s.api('GET', `/v1/emails/${id}`, { key })).body.status).to.equal('canceled');
    expect(
      (await b.req('POST', '/dashboard/queue/apply', { _csrf: csrf, action: 'purge', all: '1' })).status,
      'bulk is for operators',
    ).to.equal(404);
    expect((await b.req('POST', `/dashboard/queue/emails/${id}/hold`, { _csrf: 'wrong' })).status).to.equal(403);
  });

  it('an operator sees the summaries and confirms a bulk action before it runs', async () => {
    const team = s.team('queue-op');
    const key = s.key(team.id, 'test', ['emails:send']);
    await send(key, ['x1@bulk.test', 'x2@bulk.test']);
    const b = new Browserish(s.url);
    const login = await b.req('GET', '/dashboard/sign-in');
    await b.req('POST', '/dashboard/sign-in', {
      _csrf: b.csrf(login.text),
      password: 'correct horse battery',
      team: team.name,
    });
    const page = await b.req('GET', '/dashboard/queue?domain=bulk.test');
    expect(page.text).to.contain('By site').and.contain('By team').and.contain('By state').and.contain('x1@bulk.test');
    const csrf = b.csrf(page.text);
    const confirm = await b.req('POST', '/dashboard/queue/confirm', {
      _csrf: csrf,
      domain: 'bulk.test',
      action: 'hold',
    });
    expect(confirm.status).to.equal(200);
    expect(confirm.text).to.contain('Confirm: hold').and.contain('2 waiting recipients match');
    expect(
      s.db.prepare("SELECT count(*) FROM deliveries WHERE held_at IS NOT NULL AND domain = 'bulk.test'").pluck().get(),
      'nothing changed yet',
    ).to.equal(0);
    const r = await b.req('POST', '/dashboard/queue/apply', { _csrf: csrf, domain: 'bulk.test', action: 'hold' });
    expect(r.status).to.equal(303);
    expect((await b.req('GET', r.location!)).text).to.contain('Held 2 recipients.');
    expect(
      s.db.prepare("SELECT count(*) FROM deliveries WHERE held_at IS NOT NULL AND domain = 'bulk.test'").pluck().get(),
    ).to.equal(2);
  });
});
