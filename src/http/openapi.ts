// GET /v1/openapi.json: the OpenAPI 3.1 document of the v1 API, built from the routes the router really has (so
// none is missing), the table of openapi-ops.ts and the TypeBox schemas of schemas.ts (requests, as the routes
// validate them) and resources/ (answers, as the routes build them): named `components/schemas`, referenced by
// $ref. test/helpers/contract.ts checks every answer of the integration suite against it. No key needed.
import type Router from '@koa/router';
import type { TSchema } from 'typebox';
import { WEBHOOK_EVENT_TYPES } from '../core/status.js';
import { PageLimit } from './schemas.js';
import { OPS, TAGS } from './openapi-ops.js';
import { COMPONENTS, ERROR_STATUSES, errorName, payloadName, type ErrorStatus } from './resources/index.js';
import type { Deps } from './deps.js';
import type { KoaCtx } from './middleware.js';
import type { Ctx } from '../services/context.js';

/** Said of a route the table does not know yet (test/integration/openapi.test.ts fails on it). */
export const UNDOCUMENTED = 'Undocumented route';

const NAMES = new Map<unknown, string>(Object.entries(COMPONENTS).map(([name, s]) => [s, name]));
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** A schema as plain JSON, each named sub-schema (other than `root` itself) written as its $ref. */
function toJson(node: unknown, root?: unknown): unknown {
  if (node !== root && NAMES.has(node)) return ref(NAMES.get(node)!);
  if (Array.isArray(node)) return node.map((n) => toJson(n, root));
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, toJson(v, root)]));
}

const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
const header = (description: string, type = 'integer') => ({ description, schema: { type } });
const HEADERS = {
  'X-Request-Id': header('The request id (the one sent, when valid, else a new one); it is in the logs.', 'string'),
  'RateLimit-Limit': header('The burst of the token bucket this request took from (per key, or per address).'),
  'RateLimit-Remaining': header('Tokens left in the bucket.'),
  'RateLimit-Reset': header('Seconds until the bucket is full again.'),
  'Retry-After': header('Seconds to wait before retrying.'),
  'Idempotent-Replayed': header('`true` when this is the remembered answer of an earlier request.', 'string'),
};
const headerRefs = (names: (keyof typeof HEADERS)[]) =>
  Object.fromEntries(names.map((n) => [n, { $ref: `#/components/headers/${n}` }]));

/** The error statuses a route can answer with: from what it does (key, scope, path, body, query) and its extras. */
function errorStatuses(method: string, path: string, op: (typeof OPS)[string] | undefined): ErrorStatus[] {
  const s = new Set<ErrorStatus>([500, 503]);
  if (op?.scope) [401, 429].forEach((x) => s.add(x as ErrorStatus));
  if (op?.scope && op.scope !== 'any') s.add(403);
  if (path.includes('{')) s.add(404);
  if (['POST', 'PATCH', 'PUT'].includes(method)) [413, 422].forEach((x) => s.add(x as ErrorStatus));
  if (op?.query) s.add(422);
  for (const x of op?.errors ?? []) s.add(x);
  return ERROR_STATUSES.filter((x) => s.has(x));
}

function queryParams(q: TSchema | undefined) {
  const props = (q as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
  return Object.entries(props).map(([name, schema]) => ({
    name,
    in: 'query',
    required: false,
    schema: toJson(name === 'limit' ? PageLimit : schema),
  }));
}

function operation(method: string, path: string): Record<string, unknown> {
  const op = OPS[`${method} ${path}`];
  if (!op) return { summary: UNDOCUMENTED, responses: { default: { description: UNDOCUMENTED } } };
  const keyed = op.scope !== undefined;
  const common: (keyof typeof HEADERS)[] = keyed
    ? ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']
    : ['X-Request-Id'];
  const responses: Record<string, unknown> = {};
  for (const [status, name] of Object.entries(op.ok))
    responses[status] = {
      description: name ? `${name}` : 'No content',
      headers: headerRefs(op.idempotent ? [...common, 'Idempotent-Replayed'] : common),
      ...(name ? json(ref(name)) : {}),
      ...(op.bytes ? { content: { [op.bytes]: { schema: { type: 'string', format: 'binary' } } } } : {}),
    };
  for (const status of errorStatuses(method, path, op))
    responses[status] = {
      description: `Error (${errorName(status)})`,
      headers: headerRefs(status === 429 || status === 503 ? [...common, 'Retry-After'] : common),
      ...json(ref(errorName(status))),
    };
  const pathParams = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const idem = op.idempotent
    ? [
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Retrying with the same key within 24 hours answers the first answer instead of sending again.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      ]
    : [];
  return {
    operationId: op.id,
    summary: op.summary,
    tags: [op.tag],
    ...(op.scope && op.scope !== 'any' ? { description: `Scope: \`${op.scope}\`.` } : {}),
    security: keyed ? [{ bearer: op.scope === 'any' ? [] : [op.scope] }] : [],
    parameters: [...pathParams, ...queryParams(op.query), ...idem],
    ...(op.body ? { requestBody: { required: true, ...json(ref(op.body)) } } : {}),
    responses,
  };
}

/** The 3.1 `webhooks`: what the service POSTs to a subscribed endpoint, per event kind. */
function webhooks() {
  const signing = ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
    name,
    in: 'header',
    required: true,
    description: 'Standard Webhooks signature headers (docs/webhooks.md): verify them with the endpoint secret.',
    schema: { type: 'string' },
  }));
  return Object.fromEntries(
    WEBHOOK_EVENT_TYPES.map((t) => [
      t,
      {
        post: {
          operationId: `${t.replace(/\.(\w)/g, (_m, c: string) => c.toUpperCase())}Webhook`,
          summary: `The \`${t}\` event`,
          tags: ['Webhook events'],
          parameters: signing,
          requestBody: { required: true, ...json(ref(payloadName(t))) },
          responses: {
            '2XX': { description: 'Received: the delivery succeeded.' },
            default: { description: 'Anything else (or no answer in time): retried with exponential backoff.' },
          },
        },
      },
    ]),
  );
}

/** The document for the routes registered on `router` (its /v1 prefix removed; `:id` written `{id}`). */
export function openApiDocument(router: Router, serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const layer of router.stack as { path: string; methods: string[] }[]) {
    const path = String(layer.path)
      .replace(/^\/v1/, '')
      .replace(/:(\w+)/g, '{$1}');
    for (const method of layer.methods.filter((m) => m !== 'HEAD'))
      (paths[path] ??= {})[method.toLowerCase()] = operation(method, path);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'MTA HTTP API',
      version: '1.0.0',
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'Transactional email over HTTP. Every error is the envelope `{"error": {"type", "code", "message", "param"?, ' +
        '"doc_url"}}` (codes at /docs/errors); an unknown path or method answers 404 `route_not_found`.',
    },
    servers: [{ url: `${serverUrl}/v1` }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    security: [{ bearer: [] }],
    paths,
    webhooks: webhooks(),
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key: `ps_test_…` or `ps_live_…`.' },
      },
      headers: HEADERS,
      schemas: Object.fromEntries(Object.entries(COMPONENTS).map(([name, s]) => [name, toJson(s, s)])),
    },
  };
}

const documents = new WeakMap<Ctx, () => Record<string, unknown>>();
/** The document a service serves (for /docs/api), once its openApiRoutes are registered. */
export const documentOf = (app: Ctx) => documents.get(app)?.();

export function openApiRoutes(r: Router, { app }: Deps) {
  let doc: Record<string, unknown> | null = null; // built on first use, when every route is registered
  const get = () => (doc ??= openApiDocument(r, app.config.publicUrl));
  documents.set(app, get);
  r.get('/openapi.json', (ctx: KoaCtx) => {
    ctx.body = get();
  });
}
