// Building blocks of the v1 answers' schemas (TypeBox, so JSON Schema): nullable values, timestamps, the list
// envelope, deletion receipts and the error envelope per HTTP status. Response objects refuse unknown fields, so
// an answer with a field its schema lacks fails the contract test (test/helpers/contract.ts).
import Type, { type TSchema, type TProperties } from 'typebox';
import { ERROR_CODES, type ErrorType } from '../../core/error-codes.js';

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const DateTime = (description?: string) =>
  Type.String({ format: 'date-time', ...(description ? { description } : {}) });
/** A string enum of `values`. */
export const OneOf = <const V extends readonly string[]>(values: V, description?: string) =>
  Type.Enum(values, description ? { description } : {});

/** A response object: every field listed, nothing else. */
export const Resource = <P extends TProperties>(props: P, description?: string) =>
  Type.Object(props, { additionalProperties: false, ...(description ? { description } : {}) });

/** The list envelope of interface.md: a page of `item`, and the cursor of the next one. */
export const List = <T extends TSchema>(item: T, description: string) =>
  Resource(
    {
      object: Type.Literal('list'),
      data: Type.Array(item),
      has_more: Type.Boolean(),
      next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` to fetch the next page; null on the last.' })),
    },
    description,
  );

/** What a DELETE answers for an object that is gone. */
export const Deleted = <O extends string, P extends TProperties>(object: O, extra: P) =>
  Resource({ object: Type.Literal(object), id: Type.String(), ...extra, deleted: Type.Literal(true) });

/** Codes that never come from /v1 (the admin API, the dashboard, tracking links, the CLI). */
const notV1 = (code: string, doc: string) =>
  /^(Admin API only|Dashboard only)/.test(doc) ||
  ['tracking_link_not_found', 'team_not_found', 'team_exists'].includes(code);

/** The error envelope of one HTTP status: `type` and `code` are the registry's (core/error-codes.ts) for it. */
export function errorEnvelope(status: number) {
  const entries = Object.entries(ERROR_CODES).filter(([code, e]) => e.status === status && !notV1(code, e.doc));
  const types = [...new Set(entries.map(([, e]) => e.type))] as ErrorType[];
  if (types.length === 0 && status >= 500) types.push('api_error'); // 503: the in-flight body budget (server_busy)
  const codes = entries.map(([code]) => code);
  return Resource(
    {
      error: Resource({
        type: types.length ? OneOf(types) : Type.String(),
        code: codes.length
          ? OneOf(codes, 'Stable: branch on it (listed at /docs/errors).')
          : Type.String({ description: 'Stable: branch on it (listed at /docs/errors).' }),
        message: Type.String({ description: 'For people; may change.' }),
        param: Type.Optional(Type.String({ description: 'The request field at fault, when there is one.' })),
        doc_url: Type.String({ format: 'uri', description: '`{docs_url}/errors#<code>`' }),
      }),
    },
    `The error envelope of an HTTP ${status} answer.`,
  );
}
