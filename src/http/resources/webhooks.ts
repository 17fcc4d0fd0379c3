// Webhook endpoints, their deliveries (the outbox), and the payload POSTed to an endpoint for each event.
import Type from 'typebox';
import { EVENT_TYPES } from '../../core/status.js';
import { DateTime, Deleted, List, Nullable, OneOf, Resource } from './common.js';
import { Email, EventType } from './emails.js';
import { Mode } from './account.js';

const endpointFields = {
  object: Type.Literal('webhook_endpoint'),
  id: Type.String({ pattern: '^wh_' }),
  mode: Mode,
  url: Type.String(),
  events: Type.Array(EventType),
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
    event_type: EventType,
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
        details: Type.Record(Type.String(), Type.Unknown(), {
          description: 'The event\'s `data` (docs/api.md "Events").',
        }),
      }),
    },
    `The \`${type}\` event, as POSTed to a subscribed endpoint.`,
  );
