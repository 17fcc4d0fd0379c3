// Mail received at a team's domains (decisions.md "Receiving"): the InboundEmail object of GET /v1/inbound/{id}, its
// list, and the `inbound.received` event that carries it.
import Type from 'typebox';
import { DateTime, List, Nullable, Resource } from './common.js';

const Mailbox = Resource({ address: Nullable(Type.String()), name: Nullable(Type.String()) });

export const InboundEmail = Resource(
  {
    object: Type.Literal('inbound_email'),
    id: Type.String({ pattern: '^in_' }),
    from: Nullable(Mailbox),
    to: Type.Array(Mailbox),
    cc: Type.Array(Mailbox),
    subject: Nullable(Type.String()),
    text: Nullable(Type.String()),
    html: Nullable(Type.String()),
    headers: Type.Array(Resource({ name: Type.String(), value: Type.String() }), {
      description: 'Every header line in message order, unfolded (values cut at 8 KiB).',
    }),
    message_id: Nullable(Type.String()),
    in_reply_to: Nullable(Type.String()),
    references: Type.Array(Type.String()),
    email_id: Nullable(
      Type.String({ description: 'Our email this one replies to (by In-Reply-To / References), or null.' }),
    ),
    attachments: Type.Array(
      Resource({
        filename: Nullable(Type.String()),
        content_type: Type.String(),
        size: Type.Integer({ minimum: 0 }),
        sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
        content_id: Nullable(Type.String()),
      }),
      { description: 'In order: GET /v1/inbound/{id}/attachments/{n} (n from 0) answers the bytes.' },
    ),
    auth: Resource(
      { spf: Type.String(), dkim: Type.String(), dmarc: Type.String() },
      'Verdicts as mailauth reports them: pass, fail, softfail, neutral, none, temperror, permerror, policy.',
    ),
    envelope: Resource({
      mail_from: Nullable(Type.String()),
      rcpt_to: Type.Array(
        Resource({
          address: Type.String(),
          plus: Nullable(Type.String({ description: 'The plus-address part: `reply+ticket42@` gives `ticket42`.' })),
        }),
      ),
    }),
    size: Type.Integer({ minimum: 0 }),
    received_at: DateTime(),
    content_expired_at: Nullable(
      DateTime('When the raw copy and attachment bytes were deleted (MTA_INBOUND_RETENTION_HOURS).'),
    ),
  },
  "A message received at one of the team's receiving domains (docs/receiving.md).",
);
export const InboundEmailList = List(InboundEmail, 'A page of received mail, newest first.');

export const inboundPayload = (type: 'inbound.received') =>
  Resource(
    {
      id: Type.String({ pattern: '^evt_', description: 'The event id (de-duplicate on it).' }),
      object: Type.Literal('event'),
      type: Type.Literal(type),
      created_at: DateTime(),
      data: Resource({ inbound: InboundEmail }),
    },
    'A message received at a receiving domain, as POSTed to the live endpoints subscribed to `inbound.received`.',
  );
