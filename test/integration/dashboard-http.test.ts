// Dashboard over plain HTTP against the real service: escaping, cookie flags, hashed sessions, CSRF,
// team isolation, scope gates (read-only pages, 403 on actions), revocation ending sessions, operator sign-in.
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { html, raw } from '../../src/http/dashboard/html.js';
import { FormClient as Browserish } from '../helpers/form-client.js';

describe('dashboard over HTTP', () => {
  let s: TestService;
  before(async () => {
    s = await startTestService({
      features: [dashboard],
      env: { MTA_RATE_LIMIT: '0', MTA_DASHBOARD_PASSWORD: 'correct horse battery' },
    });
  });
  after(() => s.close());

  it('escapes every interpolated value unless it is trusted markup', () => {
    const evil = `<script>alert("x")</script>' onmouseover='y`;
    expect(html`<p title="${evil}">${evil}</p>`.value).to.equal(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;y">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;y</p>',
    );
    expect(html`${[html`<b>${'<i>'}</b>`, raw('<hr>'), null, 3]}`.value).to.equal('<b>&lt;i&gt;</b><hr>3');
  });

  it('signs in with a key: HttpOnly SameSite cookie, only a hash stored, subject HTML escaped', async () => {
    const team = s.team();
    const key = s.key(team.id, 'test');
    await s.api('POST', '/v1/emails', {
      key,
      body: { from: 'a@x.test', to: 'b@y.test', subject: '<img src=x onerror=alert(1)>', text: 'x' },
    });
    const b = new Browserish(s.url);
    const res = await b.signIn(key);
    expect(res.status).to.equal(303);
    expect(res.location).to.equal('/dashboard/emails');
    const cookie = res.setCookie.find((c) => c.startsWith('mta_session='))!;
    // Attribute names are case-insensitive (RFC 6265 5.2); Koa's ctx.cookies writes them in lower case.
    expect(cookie)
      .to.match(/; HttpOnly/i)
      .and.match(/; SameSite=Lax/i)
      .and.match(/; Path=\/dashboard(;|$)/i)
      .and.not.match(/Secure/i);
    const expires = Date.parse(/; expires=([^;]+)/i.exec(cookie)![1]);
    expect(expires - Date.now()).to.be.within(12 * 3600_000 - 60_000, 12 * 3600_000 + 1000);
    const id = b.cookies.get('mta_session')!;
    const rows = s.db.prepare('SELECT id_hash FROM dashboard_sessions').pluck().all() as string[];
    expect(rows).to.include(createHash('sha256').update(id).digest('hex'));
    expect(rows).to.not.include(id);
    const list = await b.req('GET', '/dashboard/emails');
    expect(list.status).to.equal(200);
    expect(list.text).to.contain('&lt;img src=x onerror=alert(1)&gt;').and.not.contain('<img src=x');
  });

  it('turns a form posted without a session away before reading its body (303 to sign-in, even over the size limit)', async () => {
    const body = `_csrf=x&note=${'a'.repeat(100_000)}`; // over the 64 KB form limit: a 413 if it were parsed
    const res = await fetch(`${s.url}/dashboard/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
      redirect: 'manual',
    });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal('/dashboard/sign-in?notice=session_ended');
  });

  it('marks the cookie Secure when the public URL is https', async () => {
    const t = await startTestService({ features: [dashboard], env: { MTA_PUBLIC_URL: 'https://mail.example.test' } });
    try {
      const b = new Browserish(t.url);
      const res = await b.signIn(t.key(t.team().id, 'test'));
      expect(res.setCookie.find((c) => c.startsWith('mta_session=')))
        .to.match(/; Secure/i)
        .and.match(/; HttpOnly/i);
    } finally {
      await t.close();
    }
  });

  it("accepts POSTs from the public URL's origin behind a proxy that rewrites Host, and no other", async () => {
    const t = await startTestService({ features: [dashboard], env: { MTA_PUBLIC_URL: 'https://mail.example.test/' } });
    try {
      const key = t.key(t.team().id, 'test');
      const b = new Browserish(t.url);
      const page = await b.req('GET', '/dashboard/sign-in');
      expect(
        (await b.req('POST', '/dashboard/sign-in', { _csrf: b.csrf(page.text), key }, { origin: 'https://evil.test' }))
          .status,
      ).to.equal(403);
      expect(
        (
          await b.req(
            'POST',
            '/dashboard/sign-in',
            { _csrf: b.csrf(page.text), key },
            { origin: 'http://mail.example.test' },
          )
        ).status,
      ).to.equal(403);
      expect(
        (
          await b.req(
            'POST',
            '/dashboard/sign-in',
            { _csrf: b.csrf(page.text), key },
            { origin: 'https://mail.example.test' },
          )
        ).status,
      ).to.equal(303);
    } finally {
      await t.close();
    }
  });

  it('refuses keys without emails:read and unknown keys', async () => {
    const team = s.team();
    const b = new Browserish(s.url);
    expect((await b.signIn(s.key(team.id, 'test', ['emails:send']))).status).to.equal(403);
    expect((await b.signIn('ps_test_nope')).status).to.equal(401);
    expect(b.cookies.has('mta_session')).to.equal(false);
  });

  it('checks the CSRF token and the Origin on every POST', async () => {
    const team = s.team();
    const b = new Browserish(s.url);
    await b.signIn(s.key(team.id, 'live', ['emails:read', 'emails:send']));
    await s.api('POST', '/v1/suppressions', {
      key: s.key(team.id, 'live', ['emails:send']),
      body: { address: 'x@y.test' },
    });
    const page = await b.req('GET', '/dashboard/suppressions');
    const token = b.csrf(page.text);
    expect((await b.req('POST', '/dashboard/suppressions/remove', { address: 'x@y.test' })).status).to.equal(403);
    expect(
      (await b.req('POST', '/dashboard/suppressions/remove', { address: 'x@y.test', _csrf: 'forged' })).status,
    ).to.equal(403);
    expect(
      (
        await b.req(
          'POST',
          '/dashboard/suppressions/remove',
          { address: 'x@y.test', _csrf: token },
          { origin: 'https://evil.test' },
        )
      ).status,
    ).to.equal(403);
    expect(s.db.prepare('SELECT count(*) FROM suppressions WHERE team_id = ?').pluck().get(team.id)).to.equal(1);
    const ok = await b.req(
      'POST',
      '/dashboard/suppressions/remove',
      { address: 'x@y.test', _csrf: token },
      { origin: s.url },
    );
    expect(ok.status).to.equal(303);
    expect(s.db.prepare('SELECT count(*) FROM suppressions WHERE team_id = ?').pluck().get(team.id)).to.equal(0);
    expect((await b.req('POST', '/dashboard/sign-in', { key: 'whatever' })).status).to.equal(403);
  });

  it('shows a team only its own emails', async () => {
    const a = s.team();
    const other = s.team();
    const sent = await s.api('POST', '/v1/emails', {
      key: s.key(other.id, 'test'),
      body: { from: 'a@x.test', to: 'b@y.test', subject: 'secret of other team', text: 'x' },
    });
    const b = new Browserish(s.url);
    await b.signIn(s.key(a.id, 'test'));
    expect((await b.req('GET', `/dashboard/emails/${sent.body.id}`)).status).to.equal(404);
    expect((await b.req('GET', `/dashboard/emails/${sent.body.id}/timeline`)).status).to.equal(404);
    expect((await b.req('GET', '/dashboard/emails')).text).to.not.contain('secret of other team');
    expect(JSON.parse((await b.req('GET', `/dashboard/emails/statuses?ids=${sent.body.id}`)).text)).to.deep.equal({});
  });

  it('shows key management read-only without keys:write and refuses the actions', async () => {
    const team = s.team();
    const other = s.key(team.id, 'test');
    const b = new Browserish(s.url);
    await b.signIn(s.key(team.id, 'test'));
    const page = await b.req('GET', '/dashboard/keys');
    expect(page.text)
      .to.contain('Read-only')
      .and.contain('keys:write')
      .and.not.contain('Create key')
      .and.not.contain('>Revoke<');
    // GET /v1/api-keys needs keys:write: the page does not list the team's keys either.
    expect(page.text).to.not.contain(other.slice(0, 12));
    const keyId = s.db.prepare('SELECT id FROM api_keys WHERE prefix = ?').pluck().get(other.slice(0, 12)) as string;
    const res = await b.req('POST', `/dashboard/keys/${keyId}/revoke`, { _csrf: b.csrf(page.text) });
    expect(res.status).to.equal(403);
    expect((await s.api('GET', '/v1/credits', { key: other })).status).to.equal(200);
  });

  it('ends the session when its key is revoked through the API, and on sign-out', async () => {
    const team = s.team();
    const key = s.key(team.id, 'test');
    const admin = s.key(team.id, 'live', ['keys:write']);
    const b = new Browserish(s.url);
    await b.signIn(key);
    expect((await b.req('GET', '/dashboard/emails')).status).to.equal(200);
    const id = (await s.api('GET', '/v1/api-keys', { key: admin })).body.data.find(
      (k: any) => key.startsWith(k.prefix) && k.mode === 'test',
    ).id;
    expect((await s.api('DELETE', `/v1/api-keys/${id}`, { key: admin })).status).to.equal(200);
    const after = await b.req('GET', '/dashboard/emails');
    expect(after.status).to.equal(303);
    expect(after.location).to.match(/^\/dashboard\/sign-in/);
    expect((await b.req('GET', '/dashboard/emails/statuses?ids=em_x')).status).to.equal(401);

    const c = new Browserish(s.url);
    await c.signIn(s.key(team.id, 'test'));
    const page = await c.req('GET', '/dashboard/emails');
    const out = await c.req('POST', '/dashboard/sign-out', { _csrf: c.csrf(page.text) });
    expect(out.status).to.equal(303);
    // The browser is told to drop the cookie: empty value, expired, same path.
    expect(out.setCookie.find((x) => x.startsWith('mta_session=')))
      .to.match(/^mta_session=;/)
      .and.match(/; expires=Thu, 01 Jan 1970/i)
      .and.match(/; Path=\/dashboard/i);
    expect((await c.req('GET', '/dashboard/emails')).status).to.equal(303);
  });

  it('lets the operator sign in with the configured password and a team name', async () => {
    const team = s.team('Operator Target');
    const b = new Browserish(s.url);
    const page = await b.req('GET', '/dashboard/sign-in');
    expect(page.text).to.contain('Operator sign-in');
    expect(
      (await b.req('POST', '/dashboard/sign-in', { _csrf: b.csrf(page.text), password: 'wrong', team: team.name }))
        .status,
    ).to.equal(401);
    const again = await b.req('GET', '/dashboard/sign-in');
    const ok = await b.req('POST', '/dashboard/sign-in', {
      _csrf: b.csrf(again.text),
      password: 'correct horse battery',
      team: team.name,
    });
    expect(ok.status).to.equal(303);
    const keys = await b.req('GET', '/dashboard/keys');
    expect(keys.text).to.contain('Operator Target').and.contain('signed in as operator').and.contain('Create key');
  });

  it('answers a form that cannot be read with a 4xx page, not a server error', async () => {
    const b = new Browserish(s.url);
    for (const headers of [
      { 'content-encoding': 'gzip' },
      { 'content-type': 'application/x-www-form-urlencoded; charset=utf-99' },
    ] as Record<string, string>[]) {
      const res = await b.req('POST', '/dashboard/sign-in', { _csrf: 'x', key: 'y' }, headers);
      expect(res.status, JSON.stringify(headers)).to.be.within(400, 499);
      expect(res.text).to.not.contain('Something went wrong on our side');
    }
  });

  it('rejects unknown filters and tampered cursors with a readable page', async () => {
    const b = new Browserish(s.url);
    await b.signIn(s.key(s.team().id, 'test'));
    const bad = await b.req('GET', '/dashboard/emails?status=lost');
    expect(bad.status).to.equal(422);
    expect(bad.text).to.contain('Unknown status filter');
    expect((await b.req('GET', '/dashboard/emails?cursor=tampered')).status).to.equal(422);
  });

  it("pages by the API's cursors, keeping the filters", async () => {
    const team = s.team();
    const key = s.key(team.id, 'test');
    for (let i = 0; i < 27; i++)
      await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'a@x.test', to: `r${i}@y.test`, subject: `n${i}`, text: 'x', tags: ['bulk'] },
      });
    const b = new Browserish(s.url);
    await b.signIn(key);
    const ids = (t: string) => [...t.matchAll(/<tr data-email-id="([^"]+)"/g)].map((m) => m[1]);
    const first = await b.req('GET', '/dashboard/emails?tag=bulk');
    const next = /href="([^"]+)" rel="next"/.exec(first.text)![1].replace(/&amp;/g, '&');
    expect(next).to.contain('tag=bulk');
    const second = await b.req('GET', next);
    expect(ids(first.text)).to.have.length(25);
    expect(ids(second.text)).to.have.length(2);
    const api = await s.api(
      'GET',
      `/v1/emails?limit=25&tag=bulk&cursor=${new URL(next, s.url).searchParams.get('cursor')}`,
      { key },
    );
    expect(api.body.data.map((e: any) => e.id)).to.deep.equal(ids(second.text));
    expect(second.text).to.not.contain('rel="next"');
  });
});
