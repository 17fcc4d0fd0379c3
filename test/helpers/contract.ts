// The contract check: every /v1 answer a test receives through TestService.api is checked against the OpenAPI
// document (status, then body with Ajv against that status's schema). An answer the document does not describe
// throws, failing the test. Webhook bodies a test receives are checked against the document's `webhooks`
// (assertWebhookDescribed). The document is the one GET /v1/openapi.json serves (see contract()).
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import Router from '@koa/router';
import { documentOf, openApiDocument, UNDOCUMENTED } from '../../src/http/openapi.js';
import type { Ctx } from '../../src/services/context.js';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;
const DOC_ID = 'mta-openapi.json';
type Doc = {
  paths: Record<
    string,
    Record<
      string,
      { summary?: string; requestBody?: unknown; responses: Record<string, { content?: Record<string, unknown> }> }
    >
  >;
};

type Components = { components: { schemas: Record<string, unknown> } };
const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

export class Contract {
  private readonly ajv: Ajv2020;
  private readonly doc: Doc;
  private readonly templates: { path: string; re: RegExp }[];
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(doc: Record<string, unknown>) {
    this.doc = doc as unknown as Doc;
    this.ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addSchema(doc, DOC_ID);
    this.templates = Object.keys(this.doc.paths)
      .sort((a, b) => a.split('{').length - b.split('{').length) // literal segments before parameters
      .map((path) => ({ path, re: new RegExp(`^/v1${path.replace(/\{\w+\}/g, '[^/]+')}$`) }));
  }

  /**
   * Why the answer falls outside the document, or null when it is described. With `request` (the JSON body sent),
   * a success also says the document takes that body: its request schema is no stricter than the server.
   */
  check(method: string, url: string, status: number, body: unknown, request?: unknown): string | null {
    const pathname = new URL(url, 'http://x').pathname;
    if (!pathname.startsWith('/v1/') || method === 'HEAD') return null;
    const m = method.toLowerCase();
    const documented = (p: string) =>
      this.doc.paths[p][m] !== undefined && this.doc.paths[p][m].summary !== UNDOCUMENTED;
    const path = this.templates.find((t) => t.re.test(pathname) && documented(t.path))?.path;
    const what = `${method} ${pathname} answered ${status}`;
    if (!path) {
      // No such operation (an unknown route, or an undocumented one a test adds): only the error envelope of its
      // status is described (the document's info: an unknown path or method answers 404 route_not_found).
      if (status < 400) return `${what}: no such operation in the document`;
      return this.validate(`${what} (no such operation)`, ['components', 'schemas', `Error${status}`], body);
    }
    const response = this.doc.paths[path][m].responses[String(status)];
    if (!response) return `${what}: the document lists no ${status} for ${method} ${path}`;
    if (!response.content) {
      if (body !== null) return `${what}: the document says no body, got ${JSON.stringify(body)}`;
    } else if (response.content['application/json']) {
      const pointer = ['paths', path, m, 'responses', String(status), 'content', 'application/json', 'schema'];
      const wrong = this.validate(`${what} (${method} ${path})`, pointer, body);
      if (wrong) return wrong;
    }
    if (request === undefined || status >= 300 || !this.doc.paths[path][m].requestBody) return null;
    const pointer = ['paths', path, m, 'requestBody', 'content', 'application/json', 'schema'];
    return this.validate(`${what} to a body the document refuses (${method} ${path})`, pointer, request);
  }

  /**
   * Why a body POSTed to a webhook endpoint falls outside the document's `webhooks` entry of its kind (`type`), or
   * null when it is described.
   */
  checkWebhook(body: unknown): string | null {
    const type = (body as { type?: unknown } | null)?.type;
    const hooks = (this.doc as unknown as { webhooks?: Record<string, unknown> }).webhooks ?? {};
    if (typeof type !== 'string' || !Object.hasOwn(hooks, type))
      return `a webhook body of kind ${JSON.stringify(type)}: no such kind in the document's webhooks`;
    const pointer = ['webhooks', type, 'post', 'requestBody', 'content', 'application/json', 'schema'];
    return this.validate(`a \`${type}\` webhook body`, pointer, body);
  }

  /** Compiles the schema of every answer and every named schema (throws on a $ref that leads nowhere). */
  compileAll(): number {
    let n = 0;
    for (const [path, ops] of Object.entries(this.doc.paths))
      for (const [m, op] of Object.entries(ops))
        for (const [status, r] of Object.entries(op.responses))
          if (r.content?.['application/json'])
            n +=
              this.validate(
                '',
                ['paths', path, m, 'responses', status, 'content', 'application/json', 'schema'],
                undefined,
              ) === null
                ? 0
                : 1;
    for (const name of Object.keys((this.doc as unknown as Components).components.schemas))
      n += this.validate('', ['components', 'schemas', name], undefined) === null ? 0 : 1;
    return n;
  }

  private validate(what: string, pointer: string[], body: unknown): string | null {
    const ref = `${DOC_ID}#/${pointer.map(escape).join('/')}`;
    let validate = this.compiled.get(ref);
    if (!validate) {
      if (pointer[0] === 'components' && !(this.doc as unknown as Components).components.schemas[pointer[2]])
        return `${what}: the document has no ${pointer[2]}`;
      validate = this.ajv.compile({ $ref: ref });
      this.compiled.set(ref, validate);
    }
    if (validate(body)) return null;
    const errors = (validate.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '(body)'} ${e.message}`);
    return `${what}, not as the document describes it: ${errors.join('; ')}\nbody: ${String(JSON.stringify(body)).slice(0, 800)}`;
  }
}

const checkers = new Map<string, Contract>();
/**
 * The checker of the document `ctx`'s service serves (documentOf: the one GET /v1/openapi.json answers with, taken
 * in-process so checking takes nothing from the rate limiter's buckets). One per set of routes in a test process.
 */
export function contract(ctx: Ctx): Contract {
  const doc = documentOf(ctx);
  if (!doc) throw new Error('Contract: the service serves no OpenAPI document');
  return checkerOf(doc);
}

/** One checker per set of routes in a test process (compiling the schemas is the costly part). */
function checkerOf(doc: Record<string, unknown>): Contract {
  const routes = JSON.stringify(Object.entries(doc.paths as Doc['paths']).map(([p, ops]) => [p, Object.keys(ops)]));
  let c = checkers.get(routes);
  if (!c) checkers.set(routes, (c = new Contract(doc)));
  return c;
}

/** A body as a test reads it: JSON when it parses, else the text (null when empty). */
export function parseBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

/** Throws when the answer falls outside the document (of `ctx`'s service, or a served one). */
export function assertDescribed(
  of: Ctx | Contract,
  method: string,
  url: string,
  status: number,
  body: unknown,
  request?: unknown,
) {
  const violation = (of instanceof Contract ? of : contract(of)).check(method, url, status, body, request);
  if (violation) throw new Error(`Contract (test/helpers/contract.ts): ${violation}`);
}

let routeless: Contract | undefined;
/**
 * A checker of the document's `webhooks` for callers without a service at hand (the webhook receiver): the payloads
 * and the components they use are the same in every document, whatever routes it lists.
 */
export function webhookContract(): Contract {
  return (routeless ??= new Contract(openApiDocument(new Router(), 'http://127.0.0.1')));
}

/** Throws when a body a webhook endpoint received falls outside the document's `webhooks` (the parsed JSON). */
export function assertWebhookDescribed(of: Ctx | Contract, body: unknown) {
  const violation = (of instanceof Contract ? of : contract(of)).checkWebhook(body);
  if (violation) throw new Error(`Contract (test/helpers/contract.ts): ${violation}`);
}

/** The checker of the document the service at `baseUrl` serves (one in a child process: `mta serve`, a node). */
export async function servedContract(baseUrl: string): Promise<Contract> {
  const res = await fetch(`${baseUrl}/v1/openapi.json`);
  if (res.status !== 200) throw new Error(`Contract: GET /v1/openapi.json answered ${res.status}`);
  return checkerOf((await res.json()) as Record<string, unknown>);
}

/**
 * A fetch whose every /v1 answer is checked against the document (of `ctx`'s service, or a served one), as
 * TestService.api checks its own: for tests (and generated clients, test/client/) that call the API with fetch.
 * The Response is handed back unread.
 */
export function checkedFetch(of: Ctx | Contract, base: typeof fetch = fetch) {
  return async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init);
    const res = await base(req);
    assertDescribed(of, req.method, req.url, res.status, parseBody(await res.clone().text()));
    return res;
  };
}
