// Serves /docs/api (the API reference, rendered from the OpenAPI document by docs-api.ts) and /docs/errors: one
// anchored entry per error code, so every `error.doc_url` (`{docs_url}/errors#<code>`) resolves when docs_url is
// the service's own /docs (the default). The entries are core/error-codes.
import type Koa from 'koa';
import { ERROR_CODES } from '../core/error-codes.js';
import type { MountFn } from './app.js';
import { documentOf } from './openapi.js';
import { renderReference } from './docs-api.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(): string {
  const items = Object.entries(ERROR_CODES)
    .map(
      ([code, { type, status, doc }]) =>
        `<section id="${code}"><h2><code>${code}</code></h2><p>HTTP ${status}, type <code>${type}</code>.</p><p>${esc(doc)}</p></section>`,
    )
    .join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API errors</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#111}code{background:#f1f1f1;padding:0 .2em}section:target{background:#fff7d6}</style></head>
<body><main><h1>API errors</h1><p>Every error answer is <code>{"error": {"type", "code", "message", "param"?, "doc_url"}}</code>. Branch on <code>code</code>; <code>message</code> is for people.</p>
${items}</main></body></html>`;
}

export const docsMount: MountFn = (koa, { app }) => {
  const body = page();
  let reference: string | undefined;
  koa.use(async (ctx: Koa.Context, next) => {
    const doc = ctx.method === 'GET' && (ctx.path === '/docs/api' || ctx.path === '/docs/api/') && documentOf(app);
    if (doc) {
      ctx.type = 'html';
      ctx.set('Cache-Control', 'public, max-age=3600');
      ctx.body = reference ??= renderReference(doc);
      return;
    }
    if (ctx.method !== 'GET' || (ctx.path !== '/docs/errors' && ctx.path !== '/docs/errors/')) return next();
    ctx.type = 'html';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = body;
  });
};
