// Every named schema of the document (`components/schemas`): the resources the v1 routes answer with, the request
// bodies they validate, and the error envelope per HTTP status. openapi.ts writes each as a $ref wherever it is used.
import Type, { type TSchema } from 'typebox';
import { ALERT_EVENT_TYPES, EVENT_TYPES, INBOUND_EVENT_TYPES, WEBHOOK_EVENT_TYPES } from '../../core/status.js';
import {
  SendEmailDocumented,
  CreateSuppression,
  CreateKey,
  CreateDomain,
  UpdateDomain,
  WebhookBodiesDocumented,
} from '../schemas.js';
import { errorEnvelope } from './common.js';
import { AttachmentInfo, Email, EmailBatch, EmailList, EmailStatus, Event, EventList, EventType } from './emails.js';
import {
  ApiKey,
  ApiKeyCreated,
  ApiKeyList,
  CreditBalance,
  Mode,
  Scope,
  Suppression,
  SuppressionList,
} from './account.js';
import { DeletedDomain, DnsRecord, Domain, DomainList, DomainStatus } from './domains.js';
import {
  DeletedWebhookEndpoint,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
  webhookPayload,
  alertPayload,
} from './webhooks.js';
import { SiteStats, SiteStatsList, Stats } from './stats.js';
import { DmarcReport, DmarcReportList, DmarcSummary } from './dmarc.js';
import { InboundEmail, InboundEmailList, inboundPayload } from './inbound.js';

/** The HTTP statuses of error answers under /v1. */
export const ERROR_STATUSES = [401, 402, 403, 404, 409, 410, 413, 422, 429, 500, 503] as const;
export type ErrorStatus = (typeof ERROR_STATUSES)[number];
export const errorName = (status: ErrorStatus) => `Error${status}`;

const pascal = (s: string) => s.replace(/(^|[_.])(\w)/g, (_m, _u, c: string) => c.toUpperCase());
/** The payload POSTed for each event kind, by kind. */
export const WEBHOOK_PAYLOADS: Record<string, TSchema> = Object.fromEntries([
  ...EVENT_TYPES.map((t) => [t, webhookPayload(t)]),
  ...ALERT_EVENT_TYPES.map((t) => [t, alertPayload(t)]),
  ...INBOUND_EVENT_TYPES.map((t) => [t, inboundPayload(t)]),
]);
export const payloadName = (type: string) => `${pascal(type)}Event`;

export const COMPONENTS: Record<string, TSchema> = {
  Email,
  EmailStatus,
  AttachmentInfo,
  EmailList,
  EmailBatch,
  Event,
  EventType,
  EventList,
  Suppression,
  SuppressionList,
  CreditBalance,
  Mode,
  Scope,
  ApiKey,
  ApiKeyCreated,
  ApiKeyList,
  Domain,
  DomainStatus,
  DnsRecord,
  DomainList,
  DeletedDomain,
  DmarcSummary,
  DmarcReport,
  DmarcReportList,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookEndpointList,
  DeletedWebhookEndpoint,
  WebhookDelivery,
  WebhookDeliveryList,
  Stats,
  SiteStats,
  SiteStatsList,
  SendEmail: SendEmailDocumented,
  SendEmailBatch: Type.Array(SendEmailDocumented, { minItems: 1, maxItems: 100 }),
  CreateSuppression,
  CreateKey,
  CreateDomain,
  UpdateDomain,
  InboundEmail,
  InboundEmailList,
  CreateWebhook: WebhookBodiesDocumented.create,
  UpdateWebhook: WebhookBodiesDocumented.update,
  OpenApiDocument: Type.Object({ openapi: Type.Literal('3.1.0'), info: Type.Object({}), paths: Type.Object({}) }),
  ...Object.fromEntries(ERROR_STATUSES.map((s) => [errorName(s), errorEnvelope(s)])),
  ...Object.fromEntries(WEBHOOK_EVENT_TYPES.map((t) => [payloadName(t), WEBHOOK_PAYLOADS[t]])),
};
