// GET /v1/stats: counts per bucket and totals with the bounce and complaint rates (decisions.md "Statistics");
// GET /v1/stats/sites: the same per receiving site (decisions.md "Statistics by provider").
import Type from 'typebox';
import { STAT_TYPES } from '../../services/stats.js';
import { SITE_FIGURES } from '../../services/site-stats.js';
import { DateTime, List, Nullable, Resource } from './common.js';

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

const figures = Object.fromEntries(SITE_FIGURES.map((t) => [t, Type.Integer({ minimum: 0 })]));

export const SiteStats = Resource(
  {
    object: Type.Literal('site_stats'),
    site: Type.String({ description: 'The receiving site as `mta sites` names it (`simulated` in test mode).' }),
    ...figures,
    bounce_rate: rate('bounced / sent (0 when nothing was sent).'),
    complaint_rate: rate('complained / delivered (0 when nothing was delivered).'),
    deferral_rate: rate("deferrals / the site's answers to delivery attempts (0 when none)."),
    median_delivery_seconds: Nullable(
      Type.Number({
        minimum: 0,
        description:
          'Median time from accept (or scheduled time) to delivered, from a histogram: within 1 s below one second, ' +
          'within 19% above; null when nothing was delivered.',
      }),
    ),
  },
  "A team's recipients at one receiving site over a period (recipients, not emails).",
);
export const SiteStatsList = List(
  SiteStats,
  'Each site with figures in the period, by sent, largest first (one page).',
);
