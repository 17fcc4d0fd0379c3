// Webhook endpoints, their deliveries (the outbox), and the payload POSTed to an endpoint for each event.
import Type from 'typebox';
import { ALERT_EVENT_TYPES, EVENT_TYPES, WEBHOOK_EVENT_TYPES } from '../../core/status.js';
import { DateTime, Deleted, List, Nullable, OneOf, Resource } from './common.js';
import { Email, eventData } from './emails.js';
import { Mode } from './account.js';

/** What an endpoint subscribes to: an email event kind, or an alert (decisions.md "Domain and IP alerts"). */
export const WebhookEventType = OneOf(
  WEBHOOK_EVENT_TYPES,
  'An email event kind (one of the eight statuses, `opened`, `clicked`), `domain.alert` / `ip.alert`, or `inbound.received`.',
);

const endpointFields = {
  object: Type.Literal('webhook_endpoint'),
  id: Type.String({ pattern: '^wh_' }),
  mode: Mode,
  url: Type.String(),
  events: Type.Array(WebhookEventType),
  enabled: Type.Boolean(),
  disabled_reason: Nullable(Type.String()),
  created_at: DateTime(),
  updated_at: DateTime(),
};
export const WebhookEndpoint = Resource(endpointFields, "A webhook endpoint (its mode is its creator key's).");
export const WebhookEndpointWithSecret = Resource(
  {
    ...endpointFields,
    secret: Type.String({
      pattern: '^whsec_',
      description: 'The signing secret (Standard Webhooks), shown on creation and rotation only.',
    }),
  },
  'A webhook endpoint with its new signing secret.',
);
export const WebhookEndpointList = List(WebhookEndpoint, "A page of the team's endpoints.");
export const DeletedWebhookEndpoint = Deleted('webhook_endpoint', {});

export const WebhookDelivery = Resource(
  {
    object: Type.Literal('webhook_delivery'),
    id: Type.String({ pattern: '^whd_' }),
    event_id: Type.String(),
    event_type: WebhookEventType,
    status: OneOf(['pending', 'succeeded', 'failed'] as const),
    attempt_count: Type.Integer({ minimum: 0 }),
    next_attempt_at: Nullable(DateTime()),
    last_status_code: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    created_at: DateTime(),
    completed_at: Nullable(DateTime()),
    attempts: Type.Array(
      Resource({
        attempt: Type.Integer({ minimum: 1 }),
        status_code: Nullable(Type.Integer()),
        response_snippet: Nullable(Type.String()),
        error: Nullable(Type.String()),
        duration_ms: Nullable(Type.Number()),
        next_retry_at: Nullable(DateTime()),
        created_at: DateTime(),
      }),
    ),
  },
  'One event sent (or to be sent) to one endpoint, with its attempts.',
);
export const WebhookDeliveryList = List(WebhookDelivery, "A page of an endpoint's deliveries, newest first.");

/** The body POSTed to a subscribed endpoint for an event of kind `type`. */
export const webhookPayload = (type: (typeof EVENT_TYPES)[number]) =>
  Resource(
    {
      id: Type.String({ description: 'The event id: the same on every retry and replay (de-duplicate on it).' }),
      object: Type.Literal('event'),
      type: Type.Literal(type),
      created_at: DateTime(),
      data: Resource({
        email: Nullable(Email),
        recipient: Nullable(Type.String()),
        details: eventData(type),
      }),
    },
    `The \`${type}\` event, as POSTed to a subscribed endpoint.`,
  );

const alertDetails = Type.Record(Type.String(), Type.Unknown(), {
  description: 'What the alert is about (docs/deliverability.md "Alerts"): zone and answer, record, source IP…',
});
/** The body POSTed for an alert (to the team's subscribed live endpoints and to MTA_ALERT_WEBHOOK_URL). */
export const alertPayload = (type: (typeof ALERT_EVENT_TYPES)[number]) =>
  Resource(
    {
      id: Type.String({ pattern: '^evt_', description: 'The event id (de-duplicate on it).' }),
      object: Type.Literal('event'),
      type: Type.Literal(type),
      created_at: DateTime(),
      data:
        type === 'ip.alert'
          ? Resource({
              alert: OneOf(['listed', 'delisted', 'no_fcrdns'] as const),
              ip: Resource({ ip: Type.String(), pool: Type.String() }),
              details: alertDetails,
            })
          : Resource({
              alert: OneOf(['dmarc_failing_source', 'dmarc_own_failing', 'dns_record_broken'] as const),
              domain: Resource({ id: Type.String({ pattern: '^dom_' }), name: Type.String() }),
              details: alertDetails,
            }),
    },
    `The \`${type}\` event, as POSTed to a subscribed live endpoint and to MTA_ALERT_WEBHOOK_URL; each subject at most once per 7 days.`,
  );
