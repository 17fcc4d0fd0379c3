// Finding 7 of the audit over real HTTP: the operator password has 16+ characters, wrong passwords back
// off per client address and globally, X-Forwarded-For counts only from trusted proxies, failures are logged.
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { loadConfig, ConfigError } from '../../src/config/load.js';
import { startService, type Running } from '../../src/service.js';
import { createTeamPlan } from '../../src/services/keys.js';
import { runSync } from '../../src/store/op.js';
import { feature as dashboard } from '../../src/features/dashboard.js';
import { tempDir, testClock, type TestClock } from '../helpers/service.js';

const PASSWORD = 'operator password of the test';

/** The real service with the dashboard, its JSON log lines collected. */
async function start(env: Record<string, string>, clock: TestClock) {
  const lines: any[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
      cb();
    },
  });
  const config = loadConfig({
    env: {
      MTA_DATA_DIR: tempDir(),
      MTA_HTTP_PORT: '0',
      MTA_SMTP_PORT: '0',
      MTA_SUBMISSION_PORT: '0',
      MTA_SMTP_HOST: '127.0.0.1',
      MTA_HOSTNAME: 'mta.test',
      MTA_DNS_SERVERS: '127.0.0.1:9',
      MTA_RATE_LIMIT: '0',
      MTA_DASHBOARD_PASSWORD: PASSWORD,
      ...env,
    },
  });
  const svc: Running = await startService(config, {
    now: clock.now,
    log: pino({ level: 'info' }, sink),
    features: [dashboard],
  });
  const team = runSync(createTeamPlan(svc.ctx, `ops-${Math.random().toString(36).slice(2, 8)}`));
  return { svc, lines, team };
}

/** One operator sign-in attempt (GET the form for its CSRF cookie, POST it), as if from `forwardedFor`. */
async function attempt(base: string, password: string, team: string, forwardedFor?: string) {
  const xff: Record<string, string> = forwardedFor ? { 'x-forwarded-for': forwardedFor } : {};
  const page = await fetch(`${base}/dashboard/sign-in`, { headers: xff });
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1];
  const res = await fetch(`${base}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...xff, cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, password, team }),
  });
  await res.text();
  return { status: res.status, retryAfter: Number(res.headers.get('retry-after') ?? 0) };
}

describe('security: operator password (finding 7)', function () {
  this.timeout(30_000);

  it('refuses to start with an operator password under 16 characters, without echoing it, or a bad proxy entry', () => {
    expect(() => loadConfig({ env: { MTA_DASHBOARD_PASSWORD: 'fifteen chars!!' } }))
      .to.throw(ConfigError, /MTA_DASHBOARD_PASSWORD\) must have at least 16 characters/)
      .with.property('message')
      .that.does.not.contain('fifteen');
    expect(loadConfig({ env: { MTA_DASHBOARD_PASSWORD: 'sixteen chars!!!' } }).dashboardPassword).to.have.length(16);
    expect(loadConfig({ env: {} }).dashboardPassword).to.equal('');
    expect(() => loadConfig({ env: { MTA_TRUSTED_PROXIES: '10.0.0.0/8,nope' } })).to.throw(
      ConfigError,
      /MTA_TRUSTED_PROXIES.*"nope"/,
    );
    expect(loadConfig({ env: { MTA_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8,::1' } }).trustedProxies).to.deep.equal([
      '127.0.0.1',
      '10.0.0.0/8',
      '::1',
    ]);
  });

  describe('behind a trusted proxy', () => {
    const clock = testClock();
    let s: Awaited<ReturnType<typeof start>>;
    before(async () => {
      s = await start({ MTA_TRUSTED_PROXIES: '127.0.0.1' }, clock);
    });
    after(() => s.svc.close());

    it('logs each failure with the forwarded client address and never the password', async () => {
      expect(
        (await attempt(s.svc.url, 'not the password at all', s.team.name, '198.51.100.7, 127.0.0.1')).status,
      ).to.equal(401);
      const failed = s.lines.filter((l) => l.msg === 'dashboard operator sign-in failed');
      expect(failed).to.have.length(1);
      expect(failed[0]).to.include({ address: '198.51.100.7', reason: 'wrong password', level: 40 });
      expect(JSON.stringify(s.lines)).to.not.contain('not the password at all').and.not.contain(PASSWORD);
      expect((await attempt(s.svc.url, PASSWORD, s.team.name, '198.51.100.7')).status).to.equal(303);
      expect(s.lines.find((l) => l.msg === 'dashboard operator sign-in')).to.include({ address: '198.51.100.7' });
    });

    it('locks one address after 10 wrong passwords, not the others', async () => {
      clock.advance(61_000);
      for (let i = 0; i < 10; i++)
        expect((await attempt(s.svc.url, 'wrong', s.team.name, '198.51.100.8')).status).to.equal(401);
      const locked = await attempt(s.svc.url, PASSWORD, s.team.name, '198.51.100.8');
      expect(locked.status).to.equal(429);
      expect(locked.retryAfter).to.be.within(500, 600);
      expect((await attempt(s.svc.url, PASSWORD, s.team.name, '198.51.100.9')).status).to.equal(303);
    });

    it('pauses every sign-in after 20 failures in a minute from many addresses, for a growing period', async () => {
      clock.advance(61_000);
      for (let i = 0; i < 20; i++)
        expect((await attempt(s.svc.url, 'wrong', s.team.name, `203.0.113.${i + 1}`)).status, `try ${i}`).to.equal(401);
      const first = await attempt(s.svc.url, PASSWORD, s.team.name, '192.0.2.200');
      expect(first.status).to.equal(429);
      expect(first.retryAfter).to.be.within(55, 60);
      expect(
        s.lines.some(
          (l) => l.msg.startsWith('dashboard operator sign-in paused for every address') && l.lockSeconds === 60,
        ),
      ).to.equal(true);
      clock.advance(61_000);
      expect((await attempt(s.svc.url, PASSWORD, s.team.name, '192.0.2.200')).status).to.equal(303);
      for (let i = 0; i < 20; i++) await attempt(s.svc.url, 'wrong', s.team.name, `203.0.113.${i + 101}`);
      const second = await attempt(s.svc.url, PASSWORD, s.team.name, '192.0.2.201');
      expect(second.status).to.equal(429);
      expect(second.retryAfter).to.be.within(115, 120);
    });
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy (the default)', async () => {
    const clock = testClock();
    const s = await start({}, clock);
    try {
      for (let i = 0; i < 10; i++) await attempt(s.svc.url, 'wrong', s.team.name, `198.51.100.${i + 1}`);
      expect(s.lines.filter((l) => l.msg === 'dashboard operator sign-in failed').map((l) => l.address)).to.satisfy(
        (a: string[]) => a.length === 10 && a.every((x) => /127\.0\.0\.1$/.test(x)),
      );
      expect((await attempt(s.svc.url, PASSWORD, s.team.name, '198.51.100.99')).status).to.equal(429);
    } finally {
      await s.svc.close();
    }
  });
});
