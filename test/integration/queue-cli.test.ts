// The real `mta queue hold|release|purge` CLI against a running service sharing its data folder: the running
// delivery loop stops attempting held recipients within about a second (another domain keeps being retried),
// delivers them once released, and never attempts purged ones again (they end failed/purged).
import { expect } from 'chai';
import { TestDns } from '../helpers/dns.js';
import { TestMx } from '../helpers/smtp-mx.js';
import { startTestService, tempDir, type TestService } from '../helpers/service.js';
import { insertVerifiedDomain } from '../helpers/factories.js';
import { mta } from '../helpers/cli.js';
import { route, sleep } from './outbound-env.js';
import { feature as outbound } from '../../src/features/outbound.js';

describe('mta queue hold/release/purge against a running service', function () {
  this.timeout(60_000);
  let dns: TestDns, mx: TestMx, s: TestService;
  after(async () => {
    await s?.close();
    await mx?.stop();
    await dns?.stop();
  });

  it('the delivery loop honours a CLI hold, release and purge within about a second', async () => {
    const accept = new Set<string>();
    const tries = new Map<string, number>();
    dns = await new TestDns().start();
    mx = await new TestMx({
      script: {
        rcpt: (to) => {
          const domain = to.split('@')[1];
          tries.set(domain, (tries.get(domain) ?? 0) + 1);
          return accept.has(domain) ? undefined : { code: 451, message: '4.7.1 Try again later' };
        },
      },
    }).start();
    for (const d of ['held.test', 'purged.test']) route(dns, d);
    const dataDir = tempDir('mta-queue-cli-');
    s = await startTestService({
      dataDir,
      features: [outbound],
      env: {
        MTA_DNS_SERVERS: dns.server,
        MTA_OUTBOUND_PORT: String(mx.port),
        MTA_OUTBOUND_TIMEOUT_SECONDS: '1',
        MTA_RETRY_MIN_SECONDS: '0.2',
        MTA_RETRY_MAX_SECONDS: '0.5',
        MTA_QUEUE_LIFETIME_SECONDS: '120',
        MTA_RATE_LIMIT: '0',
      },
    });
    const team = s.team();
    const key = s.key(team.id, 'live', ['emails:send', 'emails:read']);
    const dom = insertVerifiedDomain(s.db, team.id, 'sender.test');
    dns.set(`${dom.selector}._domainkey.sender.test`, { TXT: [`v=DKIM1; k=rsa; p=${dom.publicKey}`] });
    const send = async (to: string[]) => {
      const r = await s.api('POST', '/v1/emails', {
        key,
        body: { from: 'app@sender.test', to, subject: 's', text: 'x' },
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      return r.body.id as string;
    };
    const status = async (id: string) => (await s.api('GET', `/v1/emails/${id}`, { key })).body.status as string;
    const settled = async (id: string, want: string) => {
      for (const end = Date.now() + 3000; Date.now() < end && (await status(id)) !== want;) await sleep(20);
      return status(id);
    };
    const cli = async (...args: string[]) => {
      const r = await mta(['queue', ...args], { MTA_DATA_DIR: dataDir });
      expect(r.code, r.stderr).to.equal(0);
      return JSON.parse(r.stdout);
    };
    const delivered = (domain: string) => mx.messages.flatMap((m) => m.to).filter((t) => t.endsWith(`@${domain}`));
    const triesOf = (domain: string) => tries.get(domain) ?? 0;

    const heldId = await send(['a@held.test', 'b@held.test']);
    const purgedId = await send(['c@purged.test']);
    const until = Date.now() + 8000; // both deferred and retried by the loop
    while ((triesOf('held.test') < 4 || triesOf('purged.test') < 2) && Date.now() < until) await sleep(50);
    expect(await status(heldId)).to.equal('delivery_delayed');

    // Hold: after about a second (one attempt in flight may finish), no more attempts while the other domain is retried.
    expect(await cli('hold', '--domain', 'held.test')).to.deep.equal({ matched: 2 });
    await sleep(1000);
    const heldTries = triesOf('held.test');
    const otherTries = triesOf('purged.test');
    accept.add('held.test');
    // The window: until the loop has retried the other domain twice (retries every 0.2–0.5 s), at most 2 s.
    for (const end = Date.now() + 2000; triesOf('purged.test') <= otherTries + 1 && Date.now() < end;) await sleep(20);
    expect(triesOf('held.test'), 'a held recipient is never attempted').to.equal(heldTries);
    expect(triesOf('purged.test'), 'the loop keeps retrying the other domain').to.be.greaterThan(otherTries + 1);
    expect(delivered('held.test')).to.have.length(0);
    const listed = await cli('list', '--domain', 'held.test');
    expect(listed.map((r: { state: string }) => r.state)).to.deep.equal(['held', 'held']);

    // Release: due at once, delivered by the running loop's next look. An order, not a wall-clock bound (1.5 s, which
    // the parallel test phase's load stretched): the loop keeps retrying the other domain (every 0.2–0.5 s) and looks
    // at the store at each of those retries at the latest, so the released recipients are delivered before the other
    // domain has been tried more than a few times again (held, they would never be).
    expect(await cli('release', '--domain', 'held.test')).to.deep.equal({ matched: 2 });
    const triesAtRelease = triesOf('purged.test');
    for (const end = Date.now() + 20_000; delivered('held.test').length < 2 && Date.now() < end;) await sleep(20);
    expect(delivered('held.test').sort()).to.deep.equal(['a@held.test', 'b@held.test']);
    expect(triesOf('purged.test') - triesAtRelease, "delivered at the loop's next look").to.be.at.most(3);
    expect(await settled(heldId, 'delivered')).to.equal('delivered');

    // Purge: ends failed/purged at once; the loop never attempts it again.
    expect(await cli('purge', '--domain', 'purged.test', '--reason', 'cleanup')).to.deep.equal({ matched: 1 });
    expect(await status(purgedId)).to.equal('failed');
    await sleep(1000);
    const purgedTries = triesOf('purged.test');
    accept.add('purged.test');
    await sleep(1500);
    expect(triesOf('purged.test'), 'a purged recipient is never attempted').to.equal(purgedTries);
    expect(delivered('purged.test')).to.have.length(0);
    const row = s.db.prepare("SELECT status, reason FROM deliveries WHERE domain = 'purged.test'").get();
    expect(row).to.deep.equal({ status: 'failed', reason: 'purged' });
    expect(await cli('summary')).to.deep.equal({ by: 'site', groups: [] });
  });
});
