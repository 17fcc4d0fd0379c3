// Request body and query schemas of the v1 API (TypeBox), compiled once in validate.ts.
import Type from 'typebox';
import { STATUSES } from '../core/status.js';

const Str = (max: number, min = 0) => Type.String({ maxLength: max, minLength: min });
const NullableStr = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);
const AddressList = Type.Array(Str(320, 3), { maxItems: 50 });

/** Lengths and formats of the fields are checked by services/attachments (so `param` can name the item). */
const Attachment = Type.Object(
  {
    filename: Type.String({ maxLength: 1024 }),
    content: Type.String(),
    content_type: Type.Optional(NullableStr(1024)),
    content_id: Type.Optional(NullableStr(1024)),
  },
  { additionalProperties: false },
);

export const SendEmail = Type.Object(
  {
    from: Str(320, 3),
    to: Type.Union([Str(320, 3), Type.Array(Str(320, 3), { minItems: 1, maxItems: 50 })]),
    cc: Type.Optional(Type.Union([AddressList, Type.Null()])),
    bcc: Type.Optional(Type.Union([AddressList, Type.Null()])),
    reply_to: Type.Optional(NullableStr(320)),
    subject: Type.String({ maxLength: 998, pattern: '^[^\\r\\n]*$' }),
    html: Type.Optional(NullableStr(5 * 1024 * 1024)),
    text: Type.Optional(NullableStr(5 * 1024 * 1024)),
    tags: Type.Optional(Type.Union([Type.Array(Str(256, 1), { maxItems: 10 }), Type.Null()])),
    headers: Type.Optional(Type.Union([Type.Record(Type.String(), Str(998), { maxProperties: 20 }), Type.Null()])),
    scheduled_at: Type.Optional(NullableStr(64)),
    tracking: Type.Optional(
      Type.Union([
        Type.Object(
          { opens: Type.Optional(Type.Boolean()), clicks: Type.Optional(Type.Boolean()) },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
    ),
    attachments: Type.Optional(Type.Union([Type.Array(Attachment, { maxItems: 100 }), Type.Null()])),
  },
  { additionalProperties: false },
);

/** POST /emails/batch: 1 to 100 emails (items are checked one by one so `param` names the item). */
export const SendBatch = Type.Array(Type.Unknown(), { minItems: 1, maxItems: 100 });

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.String({ maxLength: 10 })),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
});

export const EmailListQuery = Type.Object({
  limit: ListQuery.properties.limit,
  cursor: ListQuery.properties.cursor,
  status: Type.Optional(Type.Union(STATUSES.map((s) => Type.Literal(s)))),
  test_mode: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  tag: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
});

export const CreateSuppression = Type.Object(
  {
    address: Str(320, 3),
    reason: Type.Optional(Type.Union([Type.Literal('manual'), Type.Literal('hard_bounce'), Type.Literal('complaint')])),
  },
  { additionalProperties: false },
);

export const CreateKey = Type.Object(
  {
    name: Type.Optional(Type.Union([Str(200), Type.Null()])),
    mode: Type.Optional(Type.Union([Type.Literal('test'), Type.Literal('live')])),
    scopes: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 16 })),
  },
  { additionalProperties: false },
);

/** GET /stats: from/to are checked by services/stats (ISO 8601, order, at most 90 days apart). */
export const StatsQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ maxLength: 64 })),
    to: Type.Optional(Type.String({ maxLength: 64 })),
    granularity: Type.Optional(Type.Union([Type.Literal('hour'), Type.Literal('day')])),
    test_mode: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  },
  { additionalProperties: false },
);
