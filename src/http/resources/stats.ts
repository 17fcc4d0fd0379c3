// GET /v1/stats: counts per bucket and totals with the bounce and complaint rates (decisions.md "Statistics").
import Type from 'typebox';
import { STAT_TYPES } from '../../services/stats.js';
import { DateTime, Resource } from './common.js';

const counts = Object.fromEntries(STAT_TYPES.map((t) => [t, Type.Integer({ minimum: 0 })]));
const rate = (d: string) => Type.Number({ minimum: 0, maximum: 1, description: d });

export const Stats = Resource(
  {
    object: Type.Literal('stats'),
    granularity: Type.Enum(['hour', 'day'] as const),
    from: DateTime(),
    to: DateTime(),
    test_mode: Type.Boolean(),
    data: Type.Array(Resource({ start: DateTime(), ...counts })),
    totals: Resource({
      ...counts,
      bounce_rate: rate('bounced / sent (0 when nothing was sent).'),
      complaint_rate: rate('complained / delivered (0 when nothing was delivered).'),
    }),
  },
  "A team's sending statistics over time.",
);
