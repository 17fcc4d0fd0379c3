// GET /v1/domains/{id}/dmarc and /dmarc/reports: what DMARC aggregate reports say of a domain (decisions.md
// "DMARC summary"; docs/deliverability.md).
import Type from 'typebox';
import { DateTime, List, Nullable, Resource } from './common.js';

const rate = (d: string) => Type.Number({ minimum: 0, maximum: 1, description: d });
const count = (d: string) => Type.Integer({ minimum: 0, description: d });

export const DmarcSource = Resource(
  {
    source_ip: Type.String({ description: 'The IP address the reporters saw the mail come from.' }),
    reverse_dns: Nullable(
      Type.String({ description: 'Its PTR name, looked up when asked (null: none, failed, or too slow).' }),
    ),
    ours: Type.Boolean({ description: "One of this service's sending IPs (MTA_SENDING_IPS, MTA_IP_POOLS)." }),
    messages: count('Messages the records of this source stand for.'),
    dmarc_pass: count('Of them, passing DMARC (aligned DKIM or SPF pass).'),
    dkim_aligned: count('Of them, with an aligned DKIM pass.'),
    spf_aligned: count('Of them, with an aligned SPF pass.'),
    disposition: Resource({
      none: count('Delivered as usual.'),
      quarantine: count('Quarantined.'),
      reject: count('Rejected.'),
    }),
    reporters: Type.Array(Type.String(), { description: 'The reporting organisations (org_name), sorted.' }),
  },
  'One source IP of the mail reported.',
);

export const DmarcSummary = Resource(
  {
    object: Type.Literal('dmarc_summary'),
    domain: Type.String(),
    from: DateTime(),
    to: DateTime(),
    reports: count(
      'Reports whose date range begins in [from, to) and that are counted: authenticated ones (a DKIM signature or SPF pass aligned with the reporter) and ones received before the check existed.',
    ),
    unauthenticated_reports: count(
      'Reports in the window left out of every figure here: nothing aligned with the reporter vouched for them (listed with authenticated false).',
    ),
    messages: count('Messages the counted reports stand for.'),
    dmarc_pass_rate: rate('Messages passing DMARC / messages (0 when none).'),
    dkim_aligned_rate: rate('Messages with an aligned DKIM pass / messages.'),
    spf_aligned_rate: rate('Messages with an aligned SPF pass / messages.'),
    sources: Type.Array(DmarcSource, { description: 'By messages, largest first.' }),
  },
  'What the DMARC aggregate reports received for a domain say of the mail sent in its name.',
);

export const DmarcReport = Resource(
  {
    object: Type.Literal('dmarc_report'),
    id: Type.String({ pattern: '^dmr_' }),
    org_name: Type.String({ description: 'The reporting organisation.' }),
    report_id: Type.String(),
    begin: DateTime('Start of the period the report covers.'),
    end: DateTime('End of the period the report covers.'),
    records: count('Rows of the report.'),
    messages: count('Messages its rows stand for.'),
    authenticated: Nullable(
      Type.Boolean({
        description:
          'Whether a DKIM signature or an SPF pass aligned with the reporter’s own address (report_metadata/email) ' +
          'vouches for the message; only authenticated reports raise alerts. null: received before the check existed.',
      }),
    ),
    authenticated_by: Nullable(
      Type.String({ description: 'What vouched for it: `dkim:<signing domain>` or `spf:<MAIL FROM domain>`.' }),
    ),
  },
  'A DMARC aggregate report received for the domain.',
);
export const DmarcReportList = List(DmarcReport, "A page of a domain's DMARC reports.");
