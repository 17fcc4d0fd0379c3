// Who may undo a hold (operations.md "Security model", "Queue control"): a hold remembers who placed it. An
// operator's hold (admin API, CLI, the operator's dashboard session) is released only by the operator; a team's own
// dashboard session releases its own holds and nothing else, and its `matched` counts only what it released.
// Through the real listeners: the admin API, the dashboard over HTTP, the delivery loop and a loopback MX.
import fs from 'node:fs';
import { expect } from 'chai';
import { outboundEnv, sleep, type OutboundEnv } from './outbound-env.js';
import { FormClient } from '../helpers/form-client.js';
import { feature as outbound } from '../../src/features/outbound.js';
import { feature as operations } from '../../src/features/operations.js';
import { feature as dashboard } from '../../src/features/dashboard.js';

const TOKEN = 'admin-token-for-tests-0123456789';
const PASSWORD = 'correct horse battery staple';

describe('security: who may release a hold', function () {
  this.timeout(30000);
  let e: OutboundEnv;
  beforeEach(async () => {
    e = await outboundEnv({
      features: [operations, outbound, dashboard],
      env: { MTA_ADMIN_TOKEN: TOKEN, MTA_DASHBOARD_PASSWORD: PASSWORD },
    });
  });
  afterEach(() => e.close());

  const admin = (p: string, body: unknown) =>
    e.s.api('POST', `/admin/v1${p}`, { body, headers: { authorization: `Bearer ${TOKEN}` } });
  const held = () =>
    e.s.db.prepare('SELECT count(*) FROM deliveries WHERE held_at IS NOT NULL').pluck().get() as number;
  /** Emails scheduled shortly ahead, so none is attempted before the hold lands. */
  const sendSoon = async (n: number) => {
    const at = new Date(Date.now() + 3000).toISOString();
    return Promise.all(
      Array.from({ length: n }, (_, i) => e.send({ to: [`a${i}@rcpt.test`, `b${i}@rcpt.test`], scheduled_at: at })),
    );
  };
  /** One dashboard button: POST, follow the redirect, the notice it shows. */
  const click = async (c: FormClient, id: string, what: string) => {
    const page = await c.req('GET', '/dashboard/queue');
    const r = await c.req('POST', `/dashboard/queue/emails/${id}/${what}`, { _csrf: c.csrf(page.text) });
    expect(r.status).to.equal(303);
    return /(Held|Released) (\d+) recipients\./.exec((await c.req('GET', r.location!)).text)?.[0];
  };
  const teamSession = async () => {
    const c = new FormClient(e.s.url);
    expect((await c.signIn(e.live)).status).to.equal(303);
    return c;
  };

  it("an operator's hold on a team's mail survives the team's releases; the operator's release delivers", async () => {
    const emails = await sendSoon(2);
    expect((await admin('/queue/hold', { team: e.teamId })).body).to.deep.equal({ matched: 4 });
    const team = await teamSession();
    const page = await team.req('GET', '/dashboard/queue');
    expect(page.text, 'no Release button for what the operator holds').to.not.contain('>Release</button>');
    expect(page.text).to.contain('Held by the operator');
    for (const m of emails) {
      expect(await click(team, m.id, 'release')).to.equal('Released 0 recipients.');
      expect(await click(team, m.id, 'hold'), 'already held').to.equal('Held 0 recipients.');
      expect(await click(team, m.id, 'release'), "a team's hold never replaces the operator's").to.equal(
        'Released 0 recipients.',
      );
    }
    expect(held()).to.equal(4);
    await sleep(3500); // past the scheduled time: a released recipient would have gone out by now
    expect(e.mx.messages, 'nothing reached the MX').to.have.length(0);
    for (const m of emails)
      expect((await e.s.api('GET', `/v1/emails/${m.id}`, { key: e.live })).body.status).to.equal('queued');
    const list = (await e.s.api('GET', `/admin/v1/queue?team=${e.teamId}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })) as any;
    expect(list.body.map((r: any) => [r.state, r.held_by])).to.deep.equal(Array(4).fill(['held', 'operator']));

    expect((await admin('/queue/release', { team: e.teamId })).body).to.deep.equal({ matched: 4 });
    for (const m of emails) await e.waitStatus(m.id, ['delivered']);
    expect(e.mx.messages, 'one message per recipient').to.have.length(4);
    const actions = (await e.events(emails[0].id)).filter((x: any) => x.data.action);
    expect(actions.map((x: any) => [x.data.action, x.data.source])).to.deep.equal([
      ['hold', 'operator'],
      ['hold', 'operator'],
      ['release', 'operator'],
      ['release', 'operator'],
    ]);
  });

  it("a team releases its own hold; once the operator holds it too, only the operator's session releases it", async () => {
    const [m] = await sendSoon(1);
    const team = await teamSession();
    expect(await click(team, m.id, 'hold')).to.equal('Held 2 recipients.');
    expect(await click(team, m.id, 'release'), 'its own hold').to.equal('Released 2 recipients.');
    expect(await click(team, m.id, 'hold')).to.equal('Held 2 recipients.');
    expect(
      (await admin('/queue/hold', { email: m.id })).body,
      "the operator's hold takes over the team's",
    ).to.deep.equal({ matched: 2 });
    expect(await click(team, m.id, 'release')).to.equal('Released 0 recipients.');
    expect(held()).to.equal(2);

    const operator = new FormClient(e.s.url);
    expect((await operator.signInWith({ password: PASSWORD, team: e.teamId })).status).to.equal(303);
    expect(await click(operator, m.id, 'release')).to.equal('Released 2 recipients.');
    await e.waitStatus(m.id, ['delivered']);
    expect(e.mx.messages).to.have.length(2);
  });

  it('holds placed before migration 021 belong to whoever placed their last hold (its event), else the operator', async () => {
    const [mine, ops] = await sendSoon(2);
    const team = await teamSession();
    expect(await click(team, mine.id, 'hold')).to.equal('Held 2 recipients.');
    expect((await admin('/queue/hold', { email: ops.id })).body).to.deep.equal({ matched: 2 });
    // As the store was before 021: held rows that do not say who holds them. Then 021's backfill statement.
    e.s.db.prepare('UPDATE deliveries SET held_by = NULL').run();
    const dir = process.env.MTA_TEST_ENGINE === 'pg' ? 'migrations-pg' : 'migrations';
    const file = fs.readFileSync(new URL(`../../src/store/${dir}/021_hold_owner.sql`, import.meta.url), 'utf8');
    e.s.db.exec(file.slice(file.indexOf('UPDATE deliveries')));
    const owners = e.s.db
      .prepare('SELECT DISTINCT e.id, d.held_by FROM deliveries d JOIN emails e ON e.seq = d.email_seq ORDER BY 2')
      .all();
    expect(owners).to.deep.equal([
      { id: ops.id, held_by: 'operator' },
      { id: mine.id, held_by: 'team' },
    ]);
    expect(await click(team, ops.id, 'release')).to.equal('Released 0 recipients.');
    expect(await click(team, mine.id, 'release')).to.equal('Released 2 recipients.');
  });
});
