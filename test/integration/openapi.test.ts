// GET /v1/openapi.json: an OpenAPI 3.1 document served without a key that holds every route of every feature with
// its operationId, tag, scope and every status it answers with (named components/schemas, the error envelope per
// status), its parameters and headers, and the webhooks of every event kind; and the contract check that uses it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { FEATURES } from '../../src/features.js';
import { feature as api } from '../../src/features/api.js';
import { UNDOCUMENTED, documentOf } from '../../src/http/openapi.js';
import { STATUSES, WEBHOOK_EVENT_TYPES } from '../../src/core/status.js';
import { Contract, assertWebhookDescribed, checkedFetch, contract, servedContract } from '../helpers/contract.js';
import { insertVerifiedDomain } from '../helpers/factories.js';

describe('GET /v1/openapi.json', () => {
  let s: TestService;
  before(async () => {
    s = await startTestService();
  });
  after(() => s.close());

  /** Every (method, path) the features register, found independently of the document. */
  function registered(): string[] {
    const r = new Router({ prefix: '/v1' });
    const deps = { app: s.ctx, auth: () => async (_c: unknown, next: () => Promise<unknown>) => next() };
    for (const f of [api, ...FEATURES].map((make) => make(s.ctx)))
      for (const fn of f.routes ?? []) fn(r, deps as never);
    return (r.stack as { path: string; methods: string[] }[]).flatMap((l) =>
      l.methods
        .filter((m) => m !== 'HEAD')
        .map((m) => `${m} ${l.path.replace(/^\/v1/, '').replace(/:(\w+)/g, '{$1}')}`),
    );
  }

  it('documents every route of every feature: operationId, tag, security, every status with its schema', async () => {
    const r = await s.api('GET', '/v1/openapi.json');
    expect(r.status).to.equal(200);
    const doc = r.body;
    expect(doc.openapi).to.equal('3.1.0');
    // What Redocly's recommended rules ask of it (npm run lint:api): a license and a described tag for each operation.
    expect(doc.info.license).to.deep.equal({ name: 'MIT', identifier: 'MIT' });
    const tags = new Map(doc.tags.map((t: { name: string; description?: string }) => [t.name, t.description]));
    for (const t of tags.values()) expect(t).to.be.a('string').and.not.equal('');
    const routes = registered();
    expect(routes).to.include.members(['POST /emails', 'POST /emails/batch', 'GET /domains/{id}', 'GET /openapi.json']);
    const ids = new Set<string>();
    for (const route of routes) {
      const [method, path] = route.split(' ');
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op, `${route} is in the document`).to.be.an('object');
      expect(op.summary, `${route} has a summary`).to.be.a('string').and.not.equal(UNDOCUMENTED);
      expect(op.operationId, `${route} has an operationId`).to.be.a('string');
      expect(ids.has(op.operationId), `${op.operationId} is unique`).to.equal(false);
      ids.add(op.operationId);
      expect(op.tags).to.have.length(1);
      expect(tags.has(op.tags[0]), `${route}'s tag is described`).to.equal(true);
      expect(op.security).to.be.an('array');
      expect(op.responses).not.to.have.property('default');
      for (const [status, res] of Object.entries<any>(op.responses)) {
        if (status === '204') expect(res.content, `${route} ${status}`).to.equal(undefined);
        else if (Number(status) < 300 && !res.content['application/json'])
          // bytes (a received message, an attachment): one media type, a binary string
          expect(
            Object.values<any>(res.content).map((c) => c.schema),
            `${route} ${status}`,
          ).to.deep.equal([{ type: 'string', format: 'binary' }]);
        else
          expect(res.content['application/json'].schema.$ref, `${route} ${status}`).to.match(
            /^#\/components\/schemas\//,
          );
        if (Number(status) >= 400)
          expect(res.content['application/json'].schema.$ref).to.equal(`#/components/schemas/Error${status}`);
      }
      if (path !== '/openapi.json') expect(op.responses, route).to.include.keys('401', '429', '500', '503');
    }
    expect(doc.paths['/emails'].post.security).to.deep.equal([{ bearer: ['emails:send'] }]);
    expect(doc.paths['/credits'].get.security).to.deep.equal([{ bearer: [] }]);
    expect(doc.paths['/openapi.json'].get.security).to.deep.equal([]);
  });

  it('is the document the contract check uses (documentOf, taken in-process)', async () => {
    const served = (await s.api('GET', '/v1/openapi.json')).body;
    expect(served).to.deep.equal(JSON.parse(JSON.stringify(documentOf(s.ctx))));
  });

  it("names every resource in components/schemas, with the contract's enums and the server's limits", async () => {
    const doc = (await s.api('GET', '/v1/openapi.json')).body;
    const c = doc.components.schemas;
    for (const name of ['Email', 'EmailList', 'EmailBatch', 'EventList', 'SuppressionList', 'CreditBalance', 'ApiKey'])
      expect(c, name).to.have.property(name);
    for (const name of ['DomainList', 'WebhookEndpointList', 'WebhookDeliveryList', 'Stats', 'Error422', 'Error503'])
      expect(c, name).to.have.property(name);
    expect(c.EmailStatus.enum).to.deep.equal([...STATUSES]);
    expect(c.Scope.enum).to.include.members(['emails:send', 'keys:write']);
    expect(c.Email.properties.status.$ref).to.equal('#/components/schemas/EmailStatus');
    expect(c.Email.additionalProperties).to.equal(false);
    expect(c.Error401.properties.error.properties.code.enum).to.deep.equal(['missing_api_key', 'invalid_api_key']);
    expect(c.Error422.properties.error.properties.type.enum).to.deep.equal(['validation_error']);
    expect(c.EmailList.properties.data.items.$ref).to.equal('#/components/schemas/Email');
    const att = c.SendEmail.properties.attachments.anyOf[0];
    expect(att.maxItems).to.equal(20);
    expect(att.items.properties.filename.maxLength).to.equal(255);
    expect(c.SendEmailBatch).to.include({ type: 'array', minItems: 1, maxItems: 100 });
    expect(doc.paths['/emails/batch'].post.responses['202'].content['application/json'].schema.$ref).to.equal(
      '#/components/schemas/EmailBatch',
    );
    expect(Object.keys(doc.paths['/suppressions'].post.responses)).to.include.members(['200', '201']);
    expect(doc.paths['/webhooks/{id}/deliveries/{delivery_id}/retry'].post.responses).to.have.property('202');
    expect(doc.paths['/domains'].post.requestBody.content['application/json'].schema.$ref).to.equal(
      '#/components/schemas/CreateDomain',
    );
    expect(c.CreateWebhook.properties.events.items.enum).to.include('delivered');
  });

  it('carries path, query and header parameters, rate-limit headers and the webhooks of every event kind', async () => {
    const doc = (await s.api('GET', '/v1/openapi.json')).body;
    expect(doc.paths['/emails/{id}'].get.parameters[0]).to.include({ name: 'id', in: 'path', required: true });
    const list = doc.paths['/emails'].get.parameters;
    expect(list.map((p: any) => p.name)).to.include.members(['limit', 'cursor', 'status']);
    expect(list.find((p: any) => p.name === 'limit').schema).to.include({ type: 'integer', minimum: 1, maximum: 100 });
    const idem = doc.paths['/emails'].post.parameters.find((p: any) => p.name === 'Idempotency-Key');
    expect(idem).to.include({ in: 'header' });
    expect(idem.schema.maxLength).to.equal(255);
    const ok = doc.paths['/emails'].get.responses['200'].headers;
    expect(ok).to.include.keys('RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset');
    expect(doc.paths['/emails'].get.responses['429'].headers).to.have.property('Retry-After');
    expect(Object.keys(doc.webhooks)).to.have.members([...WEBHOOK_EVENT_TYPES]);
    expect(doc.webhooks['ip.alert'].post.requestBody.content['application/json'].schema.$ref).to.equal(
      '#/components/schemas/IpAlertEvent',
    );
    expect(doc.components.schemas.IpAlertEvent.properties.data.properties.alert.enum).to.have.members([
      'listed',
      'delisted',
      'no_fcrdns',
    ]);
    expect(doc.webhooks.delivered.post.requestBody.content['application/json'].schema.$ref).to.equal(
      '#/components/schemas/DeliveredEvent',
    );
    expect(doc.components.schemas.DeliveredEvent.properties.data.properties.email.anyOf[0].$ref).to.equal(
      '#/components/schemas/Email',
    );
  });

  it('the contract check refuses an answer the document does not describe', () => {
    const c = new Contract(documentOf(s.ctx)!);
    expect(c.compileAll()).to.be.greaterThan(100); // every schema compiles (each refuses `undefined`)
    expect(c.check('GET', '/v1/credits', 201, {})).to.match(/lists no 201/);
    expect(c.check('GET', '/v1/emails/em_1', 200, { object: 'email' })).to.match(/not as the document describes/);
    expect(c.check('DELETE', '/v1/suppressions/a@b.test', 204, null)).to.equal(null);
    expect(c.check('GET', '/v1/nope', 200, {})).to.match(/no such operation/);
    const notFound = { error: { type: 'not_found', code: 'route_not_found', message: 'x', doc_url: 'http://x/e' } };
    expect(c.check('GET', '/v1/nope', 404, notFound)).to.equal(null);
  });

  it('checkedFetch checks a raw fetch: an answer outside the document (its own, or a served one) throws', async () => {
    const key = s.key(s.team().id, 'test');
    const ok = await checkedFetch(s.ctx)(`${s.url}/v1/credits`, { headers: { authorization: `Bearer ${key}` } });
    expect(ok.status).to.equal(200);
    expect(await ok.json()).to.have.property('object'); // handed back unread
    // A request body the server accepted but the document refuses: the document is stricter than the server.
    const team = s.team().id;
    insertVerifiedDomain(s.db, team, 'acme.test');
    const body = { from: 'a@acme.test', to: 'b@example.org', subject: 's', text: 'x' };
    const sent = await s.api('POST', '/v1/emails', { key: s.key(team, 'test'), body });
    expect(sent.status).to.equal(202);
    const c = contract(s.ctx);
    expect(c.check('POST', '/v1/emails', 202, sent.body, body)).to.equal(null);
    expect(c.check('POST', '/v1/emails', 202, sent.body, { ...body, to: [] })).to.match(/body the document refuses/);
    // A loopback server answering GET /v1/emails/{id} with a body that is not an Email.
    const liar = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"email"}');
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(liar.address() as AddressInfo).port}/v1/emails/em_1`;
    try {
      for (const checked of [checkedFetch(s.ctx), checkedFetch(await servedContract(s.url))]) {
        const err = await checked(url).then(
          () => null,
          (e: Error) => e,
        );
        expect(err?.message).to.match(/Contract .*GET \/v1\/emails\/em_1 answered 200.*not as the document describes/s);
      }
    } finally {
      liar.close();
    }
  });

  it("checks a webhook body against the document's webhooks: each kind's data typed, more fields allowed", () => {
    const c = contract(s.ctx);
    const at = '2026-01-01T00:00:00.000Z';
    const details = { url: 'https://example.org/a', source: 'tracking', later_field: 1 };
    const clicked = { id: 'evt_1', object: 'event', type: 'clicked', created_at: at };
    const body = { ...clicked, data: { email: null, recipient: 'b@example.org', details } };
    expect(c.checkWebhook(body)).to.equal(null); // a field the data may grow with is allowed
    const { url: _url, ...noUrl } = details;
    expect(c.checkWebhook({ ...body, data: { ...body.data, details: noUrl } })).to.match(
      /`clicked` webhook body.*url/s,
    );
    const bounce = { ...body, type: 'bounced', data: { ...body.data, details: { attempt: '1', hard: 'yes' } } };
    expect(c.checkWebhook(bounce)).to.match(/details\/attempt must be integer.*details\/hard must be boolean/s);
    expect(c.checkWebhook({ ...body, type: 'nope' })).to.match(/no such kind/);
    expect(() => assertWebhookDescribed(s.ctx, bounce)).to.throw(/Contract/);
  });

  it('/docs/api renders the document: every operation and schema, no script or outside asset', async () => {
    const doc = (await s.api('GET', '/v1/openapi.json')).body;
    const r = await fetch(`${s.url}/docs/api`);
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.match(/text\/html/);
    const html = await r.text();
    for (const ops of Object.values<any>(doc.paths))
      for (const op of Object.values<any>(ops)) expect(html).to.include(`id="op-${op.operationId}"`);
    for (const name of Object.keys(doc.components.schemas)) expect(html).to.include(`id="schema-${name}"`);
    expect(html).not.to.match(/<script|<link|src="http|href="http/);
  });
});
