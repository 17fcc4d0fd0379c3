// The Domain object: the DNS records to publish (with their last check) and the DKIM keys' records.
import Type from 'typebox';
import { PURPOSES } from '../../core/domain-records.js';
import { DateTime, Deleted, List, Nullable, OneOf, Resource } from './common.js';

export const DomainStatus = OneOf(['pending', 'verified', 'failed'] as const);

export const DnsRecord = Resource(
  {
    purpose: OneOf(PURPOSES),
    type: OneOf(['TXT', 'MX'] as const),
    name: Type.String(),
    value: Type.String(),
    status: DomainStatus,
    found: Type.Optional(Nullable(Type.String({ description: 'What the last check found, when it did not match.' }))),
    expected: Type.Optional(Type.String()),
    error: Type.Optional(Nullable(Type.String())),
    state: Type.Optional(OneOf(['current', 'next', 'retiring'] as const, 'DKIM records: which key.')),
    algorithm: Type.Optional(OneOf(['rsa', 'ed25519'] as const)),
    signing: Type.Optional(Type.Boolean({ description: 'DKIM records: whether the key signs mail now.' })),
    retire_at: Type.Optional(Nullable(DateTime())),
  },
  'A DNS record to publish, and the result of its last check.',
);

export const Domain = Resource(
  {
    object: Type.Literal('domain'),
    id: Type.String({ pattern: '^dom_' }),
    name: Type.String(),
    status: DomainStatus,
    receiving: Type.Boolean({ description: 'Whether the team receives mail at this domain (docs/receiving.md).' }),
    records: Type.Array(DnsRecord),
    created_at: DateTime(),
    last_checked_at: Nullable(DateTime()),
  },
  'A sending domain (docs/domains.md).',
);
export const DomainList = List(Domain, "A page of the team's domains.");
export const DeletedDomain = Deleted('domain', { name: Type.String() });
