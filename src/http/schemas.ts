// Request body and query schemas of the v1 API (TypeBox), compiled once in validate.ts.
import Type from 'typebox';
import { STATUSES, WEBHOOK_EVENT_TYPES } from '../core/status.js';
import { MAX_ATTACHMENTS } from '../services/attachments.js';

const Str = (max: number, min = 0) => Type.String({ maxLength: max, minLength: min });
const NullableStr = (max: number) => Type.Union([Type.String({ maxLength: max }), Type.Null()]);
const AddressList = Type.Array(Str(320, 3), { maxItems: 50 });

/**
 * An attachment. The document states the service's limits (MAX_ATTACHMENTS, names of 1 to 255 characters); the
 * validator takes the same shape with looser lengths so services/attachments refuses with `param` naming the item.
 */
const attachments = (strict: boolean) => {
  const name = strict ? { minLength: 1, maxLength: 255 } : { maxLength: 1024 };
  const item = Type.Object(
    {
      filename: Type.String(strict ? { ...name, pattern: '^[^/\\\\\\r\\n\\u0000]*$' } : name),
      content: Type.String({ description: 'Standard base64 (line breaks allowed).' }),
      content_type: Type.Optional(NullableStr(strict ? 255 : 1024)),
      content_id: Type.Optional(Type.Union([Type.String(name), Type.Null()])),
    },
    { additionalProperties: false },
  );
  return Type.Optional(Type.Union([Type.Array(item, { maxItems: strict ? MAX_ATTACHMENTS : 100 }), Type.Null()]));
};

const sendEmail = (strict: boolean) =>
  Type.Object(
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
      attachments: attachments(strict),
    },
    { additionalProperties: false },
  );
/** POST /emails as the route checks it. */
export const SendEmail = sendEmail(false);
/** POST /emails as the document states it (the same, with the attachment limits services/attachments applies). */
export const SendEmailDocumented = sendEmail(true);

/** POST /emails/batch: 1 to 100 emails (items are checked one by one so `param` names the item). */
export const SendBatch = Type.Array(Type.Unknown(), { minItems: 1, maxItems: 100 });

/** `limit` as the document states it (a query parameter is a string on the wire; middleware limitOf reads it). */
export const PageLimit = Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page.' });

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.String({ maxLength: 10 })),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
});

/** GET /v1/emails: an unknown parameter (a typo such as `htlm`) is a 422, as on /v1/stats. */
export const EmailListQuery = Type.Object(
  {
    limit: ListQuery.properties.limit,
    cursor: ListQuery.properties.cursor,
    status: Type.Optional(Type.Union(STATUSES.map((s) => Type.Literal(s)))),
    test_mode: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
    tag: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 320,
        description:
          'A substring of the subject or of a to/cc/bcc address. Each page looks at the newest 5,000 emails the other ' +
          'filters select: it may hold fewer than `limit` (even none) with `has_more: true`; follow `next_cursor`.',
      }),
    ),
  },
  { additionalProperties: false },
);

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

/** GET /v1/stats/sites: the window and mode of /v1/stats, without granularity. */
export const SiteStatsQuery = Type.Object(
  { from: StatsQuery.properties.from, to: StatsQuery.properties.to, test_mode: StatsQuery.properties.test_mode },
  { additionalProperties: false },
);

/** GET /v1/domains/{id}/dmarc: the window of report start times (default the last 7 days). */
export const DmarcQuery = Type.Object(
  { from: StatsQuery.properties.from, to: StatsQuery.properties.to },
  { additionalProperties: false },
);

export const CreateDomain = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 253 }),
    dkim: Type.Optional(Type.Object({ ed25519: Type.Optional(Type.Boolean()) }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

export const UpdateDomain = Type.Object(
  { receiving: Type.Optional(Type.Boolean({ description: 'Receive mail at the domain (docs/receiving.md).' })) },
  { additionalProperties: false },
);

const WebhookUrl = Type.String({ minLength: 1, maxLength: 2048 });
/** Event kinds: an enum in the document; the route takes strings so services/webhooks names the unknown one. */
const webhookBodies = (strict: boolean) => {
  const kind = strict ? Type.Enum(WEBHOOK_EVENT_TYPES) : Type.String({ maxLength: 64 });
  const events = Type.Array(kind, { minItems: 1, maxItems: 20 });
  return {
    create: Type.Object({ url: WebhookUrl, events }, { additionalProperties: false }),
    update: Type.Object(
      { url: Type.Optional(WebhookUrl), events: Type.Optional(events), enabled: Type.Optional(Type.Boolean()) },
      { additionalProperties: false },
    ),
  };
};
export const WebhookBodies = webhookBodies(false);
export const WebhookBodiesDocumented = webhookBodies(true);
