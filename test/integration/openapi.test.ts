// GET /v1/openapi.json: an OpenAPI 3.1 document served without a key that holds every route of every feature
// (each with a summary), the TypeBox request schemas (attachments, batch), path parameters and the error envelope.
import Router from '@koa/router';
import { expect } from 'chai';
import { startTestService, type TestService } from '../helpers/service.js';
import { FEATURES } from '../../src/features.js';
import { feature as api } from '../../src/features/api.js';
import { UNDOCUMENTED } from '../../src/http/openapi.js';

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

  it('documents every route of every feature, each with a summary', async () => {
    const r = await s.api('GET', '/v1/openapi.json');
    expect(r.status).to.equal(200);
    const doc = r.body;
    expect(doc.openapi).to.equal('3.1.0');
    const routes = registered();
    expect(routes).to.include.members(['POST /emails', 'POST /emails/batch', 'GET /domains/{id}', 'GET /openapi.json']);
    for (const route of routes) {
      const [method, path] = route.split(' ');
      const op = doc.paths[path]?.[method.toLowerCase()];
      expect(op, `${route} is in the document`).to.be.an('object');
      expect(op.summary, `${route} has a summary`).to.be.a('string').and.not.equal(UNDOCUMENTED);
      expect(op.responses.default.content['application/json'].schema.properties).to.have.property('error');
    }
  });

  it('carries the TypeBox schemas: attachments, the batch array, path and query parameters', async () => {
    const doc = (await s.api('GET', '/v1/openapi.json')).body;
    const send = doc.paths['/emails'].post;
    const body = send.requestBody.content['application/json'].schema;
    expect(body.required).to.include.members(['from', 'to', 'subject']);
    expect(body.properties.attachments.anyOf[0].items.properties).to.have.keys(
      'filename',
      'content',
      'content_type',
      'content_id',
    );
    expect(send.responses['202'].content['application/json'].schema.properties).to.have.property('attachments');
    const batch = doc.paths['/emails/batch'].post.requestBody.content['application/json'].schema;
    expect(batch).to.include({ type: 'array', minItems: 1, maxItems: 100 });
    expect(doc.paths['/emails/{id}'].get.parameters[0]).to.include({ name: 'id', in: 'path', required: true });
    expect(doc.paths['/emails'].get.parameters.map((p: any) => p.name)).to.include.members([
      'limit',
      'cursor',
      'status',
    ]);
    expect(doc.paths['/openapi.json'].get.security).to.deep.equal([]);
  });
});
