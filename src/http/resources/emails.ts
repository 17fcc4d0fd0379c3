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

export const Event = Resource(
  {
    object: Type.Literal('event'),
    id: Type.String({ pattern: '^evt_' }),
    type: EventType,
    recipient: Nullable(Type.String({ description: 'null for email-level events (`queued`, `sent`).' })),
    created_at: DateTime(),
    data: Type.Record(Type.String(), Type.Unknown(), { description: 'docs/api.md "Events" names its fields.' }),
  },
  "An event of an email's life.",
);
export const EventList = List(Event, "A page of an email's events, oldest first.");
