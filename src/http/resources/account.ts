// Suppressions, the credit balance and API keys.
import Type from 'typebox';
import { SCOPES } from '../../services/keys.js';
import { DateTime, List, Nullable, OneOf, Resource } from './common.js';

export const Mode = OneOf(['test', 'live'] as const);
export const Scope = OneOf(SCOPES, 'What a key may do (interface.md "Authentication").');

export const Suppression = Resource(
  {
    object: Type.Literal('suppression'),
    address: Type.String({ description: 'Lower-cased.' }),
    reason: OneOf(['hard_bounce', 'complaint', 'manual'] as const),
    email_id: Nullable(Type.String({ description: 'The email whose bounce or complaint added it.' })),
    created_at: DateTime(),
  },
  'An address on the suppression list.',
);
export const SuppressionList = List(Suppression, 'A page of suppressed addresses.');

export const CreditBalance = Resource(
  {
    object: Type.Literal('credit_balance'),
    available: Type.Integer({ minimum: 0 }),
    free_remaining: Type.Integer({ minimum: 0 }),
    purchased_remaining: Type.Integer({ minimum: 0 }),
    grants: Type.Array(
      Resource({
        id: Type.String(),
        amount: Type.Integer(),
        remaining: Type.Integer(),
        expires_at: Nullable(DateTime()),
      }),
      { description: 'Unexpired grants holding credits, oldest first.' },
    ),
  },
  "The team's credits.",
);

const keyFields = {
  object: Type.Literal('api_key'),
  id: Type.String({ pattern: '^key_' }),
  name: Nullable(Type.String()),
  mode: Mode,
  scopes: Type.Array(Scope),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it.' }),
  created_at: DateTime(),
  last_used_at: Nullable(DateTime()),
  revoked_at: Nullable(DateTime()),
};
export const ApiKey = Resource(keyFields, 'An API key (never the key itself after its creation).');
export const ApiKeyCreated = Resource(
  { ...keyFields, key: Type.String({ pattern: '^ps_(test|live)_', description: 'The full key: shown this once.' }) },
  'A new API key, with the key itself.',
);
export const ApiKeyList = List(ApiKey, "The team's keys (one page: has_more is false).");
