import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';

describe('service smoke', () => {
  let s: TestService;
  before(async () => { s = await startTestService({ features: [] }); });
  after(() => s.close());

  it('answers healthz and a test send', async () => {
    expect((await s.api('GET', '/healthz')).status).to.equal(200);
    const team = s.team();
    const key = s.key(team.id);
    const r = await s.api('POST', '/v1/emails', { key, body: { from: 'a@example.com', to: 'b@example.org', subject: 'hi', text: 'x' } });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.id).to.match(/^em_[0-9a-z]{26}$/);
    const g = await s.api('GET', `/v1/emails/${r.body.id}`, { key });
    expect(g.body).to.deep.equal(r.body);
  });
});
