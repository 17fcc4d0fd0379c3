// The error-code registry: every code the service can answer with, its type, HTTP status and the text of
// its /docs/errors entry. ApiError takes only these codes (tsc checks); add a code here before using it. Pure.
export type ErrorType =
  | 'authentication_error'
  | 'permission_error'
  | 'not_found'
  | 'validation_error'
  | 'insufficient_credits'
  | 'idempotency_error'
  | 'rate_limit_error'
  | 'api_error';

export interface ErrorDoc {
  type: ErrorType;
  status: number;
  doc: string;
}

const e = (type: ErrorType, status: number, doc: string): ErrorDoc => ({ type, status, doc });

/** In the order /docs/errors lists them. */
export const ERROR_CODES = {
  missing_api_key: e('authentication_error', 401, 'No Authorization header, or not of the form "Bearer <API_KEY>".'),
  invalid_api_key: e(
    'authentication_error',
    401,
    'The key is unknown or revoked. Create a new key with `mta key create` or POST /v1/api-keys.',
  ),
  missing_scope: e(
    'permission_error',
    403,
    'The key lacks the scope this call needs (emails:send, emails:read, domains:read, domains:write, webhooks:write, keys:write).',
  ),
  test_key_not_allowed: e(
    'permission_error',
    403,
    "A test key reads the team's domains and suppression list but cannot change them (add, verify, rotate the DKIM key of or delete a domain; add or remove a suppression). Use a live key.",
  ),
  insufficient_credits: e(
    'insufficient_credits',
    402,
    'Not enough credits for the recipients of this live email; the message states how many are needed and available. Add credits, or use a test key.',
  ),
  idempotency_key_reused: e(
    'idempotency_error',
    409,
    'This Idempotency-Key was used in the last 24 hours with a different request body.',
  ),
  invalid_parameter: e('validation_error', 422, 'A field is missing or invalid; `param` names it.'),
  invalid_address: e(
    'validation_error',
    422,
    'An address field (`param` names it) holds something other than one mailbox: an unquoted `<>@,;:` in the display name, a group, or a second address. Quote the name ("Smith, John" <j@example.com>) or give one address.',
  ),
  header_not_allowed: e(
    'validation_error',
    422,
    'SMTP submission only (550 5.7.1): the message carries a header field a client may not set, `Resent-From`, `Resent-Sender` or any other `Resent-*` (they would attribute the message to someone else).',
  ),
  missing_body: e('validation_error', 422, 'Give `html`, `text` or both.'),
  all_recipients_suppressed: e(
    'validation_error',
    422,
    "Every recipient is on the team's suppression list (hard bounce, complaint or manual).",
  ),
  domain_not_verified: e(
    'validation_error',
    422,
    'Live sends need a `from` address (and a `Sender` header, if any) on a verified domain of the team (or a sub-domain of one). Add the domain and publish its DNS records.',
  ),
  invalid_json: e(
    'validation_error',
    422,
    'The body is not valid JSON, not a JSON object, or not sent as Content-Type: application/json.',
  ),
  json_too_deep: e(
    'validation_error',
    422,
    'The JSON body nests arrays or objects deeper than 64 levels; it is refused before it is parsed.',
  ),
  request_too_large: e(
    'validation_error',
    413,
    'The body exceeds the configured maximum (40 MiB by default, MTA_MAX_BODY_BYTES), or the message as built would exceed MTA_MAX_MESSAGE_BYTES (25 MiB by default).',
  ),
  email_not_cancelable: e(
    'validation_error',
    422,
    'Only a queued email whose delivery has not started can be canceled.',
  ),
  key_limit_reached: e('validation_error', 422, 'A team may hold at most 20 active keys; revoke one first.'),
  domain_exists: e('validation_error', 422, 'The team already has this domain.'),
  dkim_rotation_in_progress: e(
    'validation_error',
    422,
    "A DKIM key rotation is already under way: publish the next key's record and verify the domain before rotating again.",
  ),
  webhook_disabled: e(
    'validation_error',
    422,
    'The endpoint is disabled; enable it with PATCH /v1/webhooks/{id} before replaying.',
  ),
  team_exists: e('validation_error', 422, 'A team with this name already exists (`mta team create`).'),
  rate_limited: e(
    'rate_limit_error',
    429,
    'Too many requests for this key (or, without a valid key, from this client address); wait the Retry-After seconds.',
  ),
  queue_filter_required: e(
    'validation_error',
    422,
    'Admin API only: a queue hold or purge needs at least one filter, or `all: true` to act on the whole queue.',
  ),
  invalid_admin_token: e(
    'authentication_error',
    401,
    'Admin API only: no `Authorization: Bearer <MTA_ADMIN_TOKEN>` header, or another token. A team API key is never accepted here.',
  ),
  route_not_found: e('not_found', 404, 'No such path or method under /v1.'),
  email_not_found: e('not_found', 404, "No email with this id in the key's team."),
  domain_not_found: e('not_found', 404, "No domain with this id in the key's team."),
  webhook_not_found: e('not_found', 404, "No webhook endpoint with this id in the key's team."),
  webhook_delivery_not_found: e('not_found', 404, 'No delivery with this id for this webhook endpoint.'),
  suppression_not_found: e('not_found', 404, 'The address is not on the suppression list.'),
  api_key_not_found: e('not_found', 404, 'No API key with this id in the team.'),
  team_not_found: e('not_found', 404, 'No team has this name or id.'),
  inbound_email_not_found: e(
    'not_found',
    404,
    "No received message with this id in the key's team (a test key sees none).",
  ),
  inbound_attachment_not_found: e(
    'not_found',
    404,
    'The received message has no attachment at this position (from 0).',
  ),
  content_expired: e(
    'not_found',
    410,
    'The raw copy and attachments of received mail are kept MTA_INBOUND_RETENTION_HOURS (default 72) and are gone now; the InboundEmail object stays.',
  ),
  site_not_found: e(
    'not_found',
    404,
    'Admin API only: no delivery site with this name (GET /admin/v1/sites lists them).',
  ),
  tracking_link_not_found: e(
    'not_found',
    404,
    'A tracking link (/t/o/…, /t/c/…) whose token is malformed or was not signed by this service.',
  ),
  csrf_failed: e(
    'permission_error',
    403,
    "Dashboard only: a form that did not carry this session's CSRF token, or was sent from another site. Reload the page and try again.",
  ),
  page_not_found: e('not_found', 404, 'Dashboard only: no such page.'),
  server_busy: e(
    'api_error',
    503,
    'The service is reading as many request bodies at once as its memory budget allows (MTA_MAX_INFLIGHT_BODY_BYTES, 128 MiB by default); nothing was stored. Retry after the Retry-After seconds.',
  ),
  shutting_down: e(
    'api_error',
    503,
    'The service is stopping (SIGTERM): it takes no new request, and closes the connection; nothing was stored. Retry on another node, or after the restart.',
  ),
  store_unavailable: e(
    'api_error',
    503,
    'The store cannot be used right now: its PostgreSQL database cannot be reached (the service reconnects with back-off), or SQLite cannot write (a full disk). Nothing was stored. Retry after the Retry-After seconds; /healthz answers 503 meanwhile.',
  ),
  internal_error: e(
    'api_error',
    500,
    'The service failed; nothing internal is shown. Retry with backoff; the request id (X-Request-Id) is in the logs.',
  ),
} satisfies Record<string, ErrorDoc>;

export type ErrorCode = keyof typeof ERROR_CODES;
