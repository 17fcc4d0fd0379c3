// Serves /docs/errors: one anchored entry per error code, so every `error.doc_url`
// (`{docs_url}/errors#<code>`) resolves when docs_url is the service's own /docs (the default).
import type Koa from 'koa';
import type { MountFn } from './app.js';

/** Every error code the API answers with: [code, type, HTTP status, what it means and what to do]. */
export const ERROR_CODES: [string, string, number, string][] = [
  ['missing_api_key', 'authentication_error', 401, 'No Authorization header, or not of the form "Bearer <API_KEY>".'],
  ['invalid_api_key', 'authentication_error', 401, 'The key is unknown or revoked. Create a new key with `mta key create` or POST /v1/api-keys.'],
  ['missing_scope', 'permission_error', 403, 'The key lacks the scope this call needs (emails:send, emails:read, domains:read, domains:write, webhooks:write, keys:write).'],
  ['test_key_not_allowed', 'permission_error', 403, 'A test key reads the team\'s domains and suppression list but cannot change them (add, verify, rotate the DKIM key of or delete a domain; add or remove a suppression). Use a live key.'],
  ['insufficient_credits', 'insufficient_credits', 402, 'Not enough credits for the recipients of this live email; the message states how many are needed and available. Add credits, or use a test key.'],
  ['idempotency_key_reused', 'idempotency_error', 409, 'This Idempotency-Key was used in the last 24 hours with a different request body.'],
  ['invalid_parameter', 'validation_error', 422, 'A field is missing or invalid; `param` names it.'],
  ['invalid_address', 'validation_error', 422, 'An address field (`param` names it) holds something other than one mailbox: an unquoted `<>@,;:` in the display name, a group, or a second address. Quote the name ("Smith, John" <j@example.com>) or give one address.'],
  ['missing_body', 'validation_error', 422, 'Give `html`, `text` or both.'],
  ['all_recipients_suppressed', 'validation_error', 422, 'Every recipient is on the team\'s suppression list (hard bounce, complaint or manual).'],
  ['domain_not_verified', 'validation_error', 422, 'Live sends need a `from` address on a verified domain of the team (or a sub-domain of one). Add the domain and publish its DNS records.'],
  ['invalid_json', 'validation_error', 422, 'The body is not valid JSON, not a JSON object, or not sent as Content-Type: application/json.'],
  ['json_too_deep', 'validation_error', 422, 'The JSON body nests arrays or objects deeper than 64 levels; it is refused before it is parsed.'],
  ['request_too_large', 'validation_error', 413, 'The body exceeds the configured maximum (2 MiB by default, MTA_MAX_BODY_BYTES).'],
  ['email_not_cancelable', 'validation_error', 422, 'Only a queued email whose delivery has not started can be canceled.'],
  ['key_limit_reached', 'validation_error', 422, 'A team may hold at most 20 active keys; revoke one first.'],
  ['domain_exists', 'validation_error', 422, 'The team already has this domain.'],
  ['webhook_disabled', 'validation_error', 422, 'The endpoint is disabled; enable it with PATCH /v1/webhooks/{id} before replaying.'],
  ['rate_limited', 'rate_limit_error', 429, 'Too many requests for this key; wait the Retry-After seconds.'],
  ['route_not_found', 'not_found', 404, 'No such path or method under /v1.'],
  ['email_not_found', 'not_found', 404, 'No email with this id in the key\'s team.'],
  ['domain_not_found', 'not_found', 404, 'No domain with this id in the key\'s team.'],
  ['webhook_not_found', 'not_found', 404, 'No webhook endpoint with this id in the key\'s team.'],
  ['suppression_not_found', 'not_found', 404, 'The address is not on the suppression list.'],
  ['api_key_not_found', 'not_found', 404, 'No API key with this id in the team.'],
  ['internal_error', 'api_error', 500, 'The service failed; nothing internal is shown. Retry with backoff; the request id (X-Request-Id) is in the logs.'],
];

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(): string {
  const items = ERROR_CODES.map(([code, type, status, text]) =>
    `<section id="${code}"><h2><code>${code}</code></h2><p>HTTP ${status}, type <code>${type}</code>.</p><p>${esc(text)}</p></section>`).join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API errors</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#111}code{background:#f1f1f1;padding:0 .2em}section:target{background:#fff7d6}</style></head>
<body><main><h1>API errors</h1><p>Every error answer is <code>{"error": {"type", "code", "message", "param"?, "doc_url"}}</code>. Branch on <code>code</code>; <code>message</code> is for people.</p>
${items}</main></body></html>`;
}

export const docsMount: MountFn = (koa) => {
  const body = page();
  koa.use(async (ctx: Koa.Context, next) => {
    if (ctx.method !== 'GET' || (ctx.path !== '/docs/errors' && ctx.path !== '/docs/errors/')) return next();
    ctx.type = 'html';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = body;
  });
};
