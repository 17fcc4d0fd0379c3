// What the document says of each v1 route ("METHOD /path" as registered under /v1): its operationId, tag, scope,
// request, and every success status with its schema (a component of resources/index.ts, or null for no body).
// Error statuses follow from the route (openapi.ts errorStatuses) plus `errors` here.
import type { TSchema } from 'typebox';
import type { Scope } from '../services/keys.js';
import { DmarcQuery, EmailListQuery, ListQuery, SiteStatsQuery, StatsQuery } from './schemas.js';
import type { ErrorStatus } from './resources/index.js';

/** The document's tags, each with its description (an operation's tag must be one of these). */
export const TAGS = {
  Emails: 'Queue emails (one, or a batch of up to 100, all or none), list them, read one with its events, cancel.',
  Suppressions: 'Addresses the team never sends to (hard bounces, complaints, unsubscribes, or added by hand).',
  Account: 'The team: its credit balance and its API keys.',
  Domains:
    'Sending domains: the DNS records to publish (SPF, DKIM, DMARC), verification, DKIM rotation, DMARC reports.',
  Webhooks: 'Endpoints the service POSTs events to (signed, retried), and their deliveries.',
  Stats: 'Sending statistics over time and by receiving site.',
  Inbound: "Mail received at the team's receiving domains (docs/receiving.md): parsed, raw, attachments.",
  Meta: 'This document.',
  'Webhook events': 'What the service POSTs to a webhook endpoint, per event kind (docs/webhooks.md).',
} as const;

export interface Op {
  id: string;
  summary: string;
  tag: keyof typeof TAGS;
  /** The scope the key needs; 'any' for any key of the team; absent for no key at all. */
  scope?: Scope | 'any';
  /** Name of the request body's component. */
  body?: string;
  query?: TSchema;
  /** Success status → component name (null: no body). */
  ok: Record<number, string | null>;
  /** The success body is bytes of this media type (an attachment: its own type), not JSON; `ok` maps to null. */
  bytes?: string;
  errors?: ErrorStatus[];
  idempotent?: boolean;
  description?: string;
}

export const OPS: Record<string, Op> = {
  'POST /emails': {
    id: 'sendEmail',
    summary: 'Queue one email',
    tag: 'Emails',
    scope: 'emails:send',
    body: 'SendEmail',
    ok: { 202: 'Email' },
    errors: [402, 409],
    idempotent: true,
  },
  'POST /emails/batch': {
    id: 'sendEmailBatch',
    summary: 'Queue 1 to 100 emails, all or none',
    tag: 'Emails',
    scope: 'emails:send',
    body: 'SendEmailBatch',
    ok: { 202: 'EmailBatch' },
    errors: [402, 409],
    idempotent: true,
  },
  'GET /emails': {
    id: 'listEmails',
    summary: 'List emails, newest first',
    tag: 'Emails',
    scope: 'emails:read',
    query: EmailListQuery,
    ok: { 200: 'EmailList' },
  },
  'GET /emails/{id}': {
    id: 'getEmail',
    summary: 'Fetch an email',
    tag: 'Emails',
    scope: 'emails:read',
    ok: { 200: 'Email' },
  },
  'GET /emails/{id}/events': {
    id: 'listEmailEvents',
    summary: "An email's events, oldest first",
    tag: 'Emails',
    scope: 'emails:read',
    query: ListQuery,
    ok: { 200: 'EventList' },
  },
  'POST /emails/{id}/cancel': {
    id: 'cancelEmail',
    summary: 'Cancel a queued email',
    tag: 'Emails',
    scope: 'emails:send',
    ok: { 200: 'Email' },
  },
  'GET /suppressions': {
    id: 'listSuppressions',
    summary: 'List suppressed addresses',
    tag: 'Suppressions',
    scope: 'emails:read',
    query: ListQuery,
    ok: { 200: 'SuppressionList' },
  },
  'POST /suppressions': {
    id: 'createSuppression',
    summary: 'Suppress an address (201 when added, 200 when it already was)',
    tag: 'Suppressions',
    scope: 'emails:send',
    body: 'CreateSuppression',
    ok: { 200: 'Suppression', 201: 'Suppression' },
  },
  'DELETE /suppressions/{address}': {
    id: 'deleteSuppression',
    summary: 'Remove a suppression',
    tag: 'Suppressions',
    scope: 'emails:send',
    ok: { 204: null },
  },
  'GET /credits': {
    id: 'getCredits',
    summary: 'Credit balance and grants',
    tag: 'Account',
    scope: 'any',
    ok: { 200: 'CreditBalance' },
  },
  'POST /api-keys': {
    id: 'createApiKey',
    summary: 'Create an API key',
    tag: 'Account',
    scope: 'keys:write',
    body: 'CreateKey',
    ok: { 201: 'ApiKeyCreated' },
  },
  'GET /api-keys': {
    id: 'listApiKeys',
    summary: "List the team's keys",
    tag: 'Account',
    scope: 'keys:write',
    ok: { 200: 'ApiKeyList' },
  },
  'DELETE /api-keys/{id}': {
    id: 'revokeApiKey',
    summary: 'Revoke a key',
    tag: 'Account',
    scope: 'keys:write',
    ok: { 200: 'ApiKey' },
  },
  'POST /domains': {
    id: 'createDomain',
    summary: 'Add a sending domain (DNS records to publish)',
    tag: 'Domains',
    scope: 'domains:write',
    body: 'CreateDomain',
    ok: { 201: 'Domain' },
  },
  'GET /domains': {
    id: 'listDomains',
    summary: 'List domains',
    tag: 'Domains',
    scope: 'domains:read',
    query: ListQuery,
    ok: { 200: 'DomainList' },
  },
  'GET /domains/{id}': {
    id: 'getDomain',
    summary: 'Fetch a domain',
    tag: 'Domains',
    scope: 'domains:read',
    ok: { 200: 'Domain' },
  },
  'PATCH /domains/{id}': {
    id: 'updateDomain',
    summary: 'Change a domain: turn receiving on or off',
    tag: 'Domains',
    scope: 'domains:write',
    body: 'UpdateDomain',
    ok: { 200: 'Domain' },
  },
  'POST /domains/{id}/verify': {
    id: 'verifyDomain',
    summary: "Re-check a domain's DNS records now",
    tag: 'Domains',
    scope: 'domains:write',
    ok: { 200: 'Domain' },
  },
  'POST /domains/{id}/rotate-dkim': {
    id: 'rotateDomainDkim',
    summary: 'Start a DKIM key rotation',
    tag: 'Domains',
    scope: 'domains:write',
    ok: { 200: 'Domain' },
  },
  'DELETE /domains/{id}': {
    id: 'deleteDomain',
    summary: 'Delete a domain',
    tag: 'Domains',
    scope: 'domains:write',
    ok: { 200: 'DeletedDomain' },
  },
  'GET /inbound': {
    id: 'listInbound',
    summary: 'List received mail, newest first',
    tag: 'Inbound',
    scope: 'emails:read',
    query: ListQuery,
    ok: { 200: 'InboundEmailList' },
    description: 'A test key sees none (received mail is live data).',
  },
  'GET /inbound/{id}': {
    id: 'getInbound',
    summary: 'Fetch a received message (the object of the inbound.received event)',
    tag: 'Inbound',
    scope: 'emails:read',
    ok: { 200: 'InboundEmail' },
  },
  'GET /inbound/{id}/raw': {
    id: 'getInboundRaw',
    summary: 'The received message as it arrived',
    tag: 'Inbound',
    scope: 'emails:read',
    ok: { 200: null },
    bytes: 'message/rfc822',
    errors: [410],
  },
  'GET /inbound/{id}/attachments/{n}': {
    id: 'getInboundAttachment',
    summary: "The n-th attachment's bytes (n from 0), with its content type",
    tag: 'Inbound',
    scope: 'emails:read',
    ok: { 200: null },
    bytes: 'application/octet-stream',
    errors: [410],
  },
  'GET /domains/{id}/dmarc': {
    id: 'getDomainDmarcSummary',
    summary: "What DMARC aggregate reports say of a domain's mail: rates and sources",
    tag: 'Domains',
    scope: 'domains:read',
    query: DmarcQuery,
    ok: { 200: 'DmarcSummary' },
    description:
      'Sums the records of the reports whose date range begins in [from, to) (default: the last 7 days; at most 90 days).',
  },
  'GET /domains/{id}/dmarc/reports': {
    id: 'listDomainDmarcReports',
    summary: "A domain's DMARC aggregate reports, newest received first",
    tag: 'Domains',
    scope: 'domains:read',
    query: ListQuery,
    ok: { 200: 'DmarcReportList' },
  },
  'POST /webhooks': {
    id: 'createWebhook',
    summary: 'Create a webhook endpoint (its signing secret is shown once)',
    tag: 'Webhooks',
    scope: 'webhooks:write',
    body: 'CreateWebhook',
    ok: { 201: 'WebhookEndpointWithSecret' },
  },
  'GET /webhooks': {
    id: 'listWebhooks',
    summary: 'List webhook endpoints',
    tag: 'Webhooks',
    scope: 'webhooks:write',
    query: ListQuery,
    ok: { 200: 'WebhookEndpointList' },
  },
  'GET /webhooks/{id}': {
    id: 'getWebhook',
    summary: 'Fetch a webhook endpoint',
    tag: 'Webhooks',
    scope: 'webhooks:write',
    ok: { 200: 'WebhookEndpoint' },
  },
  'PATCH /webhooks/{id}': {
    id: 'updateWebhook',
    summary: 'Change a webhook endpoint',
    tag: 'Webhooks',
    scope: 'webhooks:write',
    body: 'UpdateWebhook',
    ok: { 200: 'WebhookEndpoint' },
  },
  'DELETE /webhooks/{id}': {
    id: 'deleteWebhook',
    summary: 'Delete a webhook endpoint',
    tag: 'Webhooks',
    scope: 'webhooks:write',
    ok: { 200: 'DeletedWebhookEndpoint' },
  },
  'POST /webhooks/{id}/rotate-secret': {
    id: 'rotateWebhookSecret',
    summary: "Rotate an endpoint's signing secret (the old one signs too for 24 hours)",
    tag: 'Webhooks',
    scope: 'webhooks:write',
    ok: { 200: 'WebhookEndpointWithSecret' },
  },
  'GET /webhooks/{id}/deliveries': {
    id: 'listWebhookDeliveries',
    summary: "An endpoint's deliveries",
    tag: 'Webhooks',
    scope: 'webhooks:write',
    query: ListQuery,
    ok: { 200: 'WebhookDeliveryList' },
  },
  'POST /webhooks/{id}/deliveries/{delivery_id}/retry': {
    id: 'retryWebhookDelivery',
    summary: 'Replay a delivery (a new delivery of the same event, due now)',
    tag: 'Webhooks',
    scope: 'webhooks:write',
    ok: { 202: 'WebhookDelivery' },
  },
  'GET /stats': {
    id: 'getStats',
    summary: 'Sending statistics over time',
    tag: 'Stats',
    scope: 'emails:read',
    query: StatsQuery,
    ok: { 200: 'Stats' },
  },
  'GET /stats/sites': {
    id: 'getSiteStats',
    summary: 'Sending statistics by receiving site (provider)',
    tag: 'Stats',
    scope: 'emails:read',
    query: SiteStatsQuery,
    ok: { 200: 'SiteStatsList' },
  },
  'GET /openapi.json': {
    id: 'getOpenApiDocument',
    summary: 'This document (no key needed)',
    tag: 'Meta',
    ok: { 200: 'OpenApiDocument' },
  },
};
