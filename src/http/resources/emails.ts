// The Email and Event objects (interface.md, docs/api.md), their lists, and the batch answer.
// A new field of the Email is one line in EmailFields.
import Type from 'typebox';
import { EVENT_TYPES, STATUSES } from '../../core/status.js';
import { DateTime, List, Nullable, OneOf, Resource } from './common.js';

export const EmailStatus = OneOf(STATUSES, 'The email status (interface.md "States and transitions").');
export const EventType = OneOf(EVENT_TYPES, 'One of the eight statuses, or `opened` / `clicked`.');

export const AttachmentInfo = Resource({
  filename: Type.String(),
  content_type: Type.String(),
  size: Type.Integer({ minimum: 0, description: 'Bytes of the decoded content.' }),
});

const Strings = Type.Array(Type.String());
export const EmailFields = {
  object: Type.Literal('email'),
  id: Type.String({ pattern: '^em_' }),
  from: Type.String({ description: 'As submitted (may be `Name <address>`).' }),
  to: Strings,
  cc: Nullable(Strings),
  bcc: Nullable(Strings),
  reply_to: Nullable(Type.String()),
  subject: Type.String(),
  status: EmailStatus,
  test_mode: Type.Boolean(),
  tags: Nullable(Strings),
  credits_charged: Type.Integer({ minimum: 0 }),
  scheduled_at: Nullable(DateTime()),
  tracking: Resource({ opens: Type.Boolean(), clicks: Type.Boolean() }),
  attachments: Type.Array(AttachmentInfo),
  content_expired_at: Nullable(DateTime('When its bodies and attachment bytes were deleted (content retention).')),
  created_at: DateTime(),
};
export const Email = Resource(EmailFields, 'An email (interface.md "Email").');
export const EmailList = List(Email, 'A page of emails, newest first.');
export const EmailBatch = Resource(
  { object: Type.Literal('list'), data: Type.Array(Email, { minItems: 1, maxItems: 100 }) },
  'The Emails of a batch, in request order.',
);

const str = (description: string) => Type.String({ description });
/** The fields event `data` may hold (decisions.md names, docs/api.md "Events"), each where it applies. */
const EVENT_DATA_FIELDS = {
  attempt: Type.Integer({ minimum: 1, description: 'The delivery attempt (1 for the first).' }),
  mx_host: str('The MX host tried (`simulated` for a test email).'),
  remote_ip: str('The address of the MX host connected to.'),
  source_ip: str('The local address the connection left from.'),
  smtp_code: Nullable(Type.Integer({ description: 'The SMTP reply code.' })),
  enhanced_status: Nullable(str('The enhanced status code, e.g. `5.1.1`.')),
  smtp_response: Nullable(str('The text of the SMTP reply (or why there was none).')),
  tls_version: Nullable(str('The TLS version of the session; null without TLS.')),
  tls_cipher: Nullable(str('The TLS cipher of the session; null without TLS.')),
  duration_ms: Type.Number({ minimum: 0, description: 'How long the attempt took.' }),
  reason: str(
    'A bounce reason of bounce-reasons.md, `invalid_mx`, `expired` or `feedback` (a complaint); on a deferral that ' +
      'transport security caused, `mta_sts` or `dane` (docs/outbound.md).',
  ),
  hard: Type.Boolean({ description: 'A hard bounce (the address is suppressed).' }),
  async: Type.Boolean({ description: 'A bounce learned from a DSN after acceptance.' }),
  source: str('Where it was learned: `smtp`, `dsn`, `arf`, `simulated`, `tracking`.'),
  url: str('The link clicked (`clicked`).'),
  suppressed: Type.Array(Type.String(), { description: 'On `queued`: the recipients dropped as suppressed.' }),
  error: str('On `failed`: why the service could not send, e.g. `domain_not_verified`.'),
  message: str('On `failed`: the same, in words.'),
  last_reason: str('On an `expired` bounce: the reason of the last deferral.'),
  final_recipient: str('On a DSN bounce naming another address than ours: that address.'),
  provider: Nullable(str('On a bounce: the mailbox provider that answered (`google`, `microsoft`, ...).')),
};
/**
 * The `data` of an event of kind `type` (any kind when omitted): the known fields typed, each present where it
 * applies (an email-level event a status move implies has `{}`), more allowed (the data may grow).
 */
export const eventData = (type?: (typeof EVENT_TYPES)[number]) => {
  const fields = Object.fromEntries(
    Object.entries(EVENT_DATA_FIELDS).map(([k, v]) => [k, type === 'clicked' && k === 'url' ? v : Type.Optional(v)]),
  );
  const schema = Type.Object(fields, {
    additionalProperties: true,
    description: 'What was learned (docs/api.md "Events"); fields added later are allowed.',
  });
  // Stored JSON, handed on as it is: typed for clients, a plain record for the presenters.
  return Type.Unsafe<Record<string, unknown>>(schema);
};

export const Event = Resource(
  {
    object: Type.Literal('event'),
    id: Type.String({ pattern: '^evt_' }),
    type: EventType,
    recipient: Nullable(Type.String({ description: 'null for email-level events (`queued`, `sent`).' })),
    created_at: DateTime(),
    data: eventData(),
  },
  "An event of an email's life.",
);
export const EventList = List(Event, "A page of an email's events, oldest first.");
