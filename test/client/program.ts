// A small program written against the generated client (openapi-typescript's types of the served document, with
// openapi-fetch): send, batch, list with pagination, domains, webhooks, stats and an error, without a cast.
// test/integration/openapi-client.test.ts generates ./generated/v1.ts, type-checks this file against it, then
// runs it against a started service. Excluded from the project's tsconfig: the types exist only once generated.
import createClient from 'openapi-fetch';
import type { components, paths } from './generated/v1.js';

type Email = components['schemas']['Email'];

/** `keys.test` sends (nothing leaves), `keys.live` manages domains (a test key changes none). */
export async function program(
  baseUrl: string,
  keys: { test: string; live: string },
  fetch: (req: Request) => Promise<Response>,
) {
  const client = (key: string) => createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${key}` }, fetch });
  const api = client(keys.test);
  const live = client(keys.live);
  const from = 'Acme <hello@acme.test>';

  const one = await api.POST('/emails', {
    body: { from, to: 'ann@example.org', subject: 'Hello', text: 'Hi' },
    params: { header: { 'Idempotency-Key': 'program-1' } },
  });
  if (!one.data) throw new Error(`send: ${one.response.status}`);
  const sent: Email = one.data;

  const batch = await api.POST('/emails/batch', {
    body: ['bob', 'cy', 'dee'].map((name) => ({
      from,
      to: [`${name}@example.org`],
      subject: `Hi ${name}`,
      text: 'Hi',
    })),
  });
  if (!batch.data) throw new Error(`batch: ${batch.response.status}`);

  // Every email, two a page, following next_cursor to the end.
  const pages: string[][] = [];
  let cursor: string | undefined;
  do {
    const page = await api.GET('/emails', { params: { query: { limit: 2, cursor } } });
    if (!page.data) throw new Error(`list: ${page.response.status}`);
    pages.push(page.data.data.map((e) => e.id));
    cursor = page.data.next_cursor ?? undefined;
  } while (cursor);

  const domain = await live.POST('/domains', { body: { name: 'news.example.test' } });
  if (!domain.data) throw new Error(`domain: ${JSON.stringify(domain.error)}`);
  const domains = await live.GET('/domains');
  const records = domain.data.records.map((r) => r.type);

  const hook = await api.POST('/webhooks', { body: { url: 'https://127.0.0.1:9/hook', events: ['delivered'] } });
  if (!hook.data) throw new Error(`webhook: ${hook.response.status}`);
  const updated = await api.PATCH('/webhooks/{id}', {
    params: { path: { id: hook.data.id } },
    body: { enabled: false },
  });

  const stats = await api.GET('/stats', { params: { query: { granularity: 'day' } } });

  // An error: its envelope is typed per status (code is one of the contract's codes for a 404).
  const missing = await api.GET('/emails/{id}', { params: { path: { id: 'em_missing' } } });
  const refused = await api.POST('/emails', { body: { from: 'x', to: 'ann@example.org', subject: 'Bad' } });

  return {
    sent: { id: sent.id, status: sent.status },
    batch: batch.data.data.map((e) => e.subject),
    pages,
    domain: { name: domain.data.name, records, listed: domains.data?.data.map((d) => d.name) ?? [] },
    webhook: { events: hook.data.events, enabled: updated.data?.enabled },
    stats: { object: stats.data?.object, granularity: stats.data?.granularity },
    missing: { status: missing.response.status, code: missing.error?.error.code },
    refused: { status: refused.response.status, type: refused.error?.error.type, param: refused.error?.error.param },
  };
}
