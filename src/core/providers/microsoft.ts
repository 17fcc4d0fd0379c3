// Microsoft (Exchange, Exchange Online/Office 365, Outlook.com/Hotmail) in the provider registry: Exchange NDR
// codes, host-gated phrases, the tables read when the remote host is Microsoft's, and its notice formats. Pure data.
// Ported from Sisimai (BSD-2-Clause): Lhost::Exchange2007, Lhost::Office365, Lhost::Outlook, Rhost::Microsoft/Outlook.
import type { BounceReason } from '../bounce-reasons.js';
import {
  type CodeRule,
  type NoticeFormat,
  type Phrases,
  type Provider,
  type ProviderInput,
  type TableMode,
  asReasons,
  readsEntry,
  byPhrase,
} from './types.js';

type R = BounceReason;
/** Exchange NDR diagnostic codes ("550 5.2.3 RESOLVER.RST.RecipSizeLimit; ..."), matched case-sensitively. */
const EXCHANGE_NDR: CodeRule = {
  name: 'ExchangeNDR',
  code: /\b((?:RESOLVER|QUEUE|SMTPSEND)\.[A-Za-z]+(?:\.\w+)?);/,
  codes: {
    'SMTPSEND.DNS.NonExistentDomain': 'hostunknown',
    'SMTPSEND.DNS.MxLoopback': 'networkerror',
    'RESOLVER.ADR.BadPrimary': 'systemerror',
    'RESOLVER.ADR.RecipNotFound': 'userunknown',
    'RESOLVER.ADR.ExRecipNotFound': 'userunknown',
    'RESOLVER.ADR.RecipLimit': 'toomanyconn',
    'RESOLVER.ADR.InvalidInSmtp': 'systemerror',
    'RESOLVER.ADR.Ambiguous': 'systemerror',
    'RESOLVER.RST.AuthRequired': 'securityerror',
    'RESOLVER.RST.NotAuthorized': 'rejected',
    'RESOLVER.RST.RecipSizeLimit': 'exceedlimit',
    'QUEUE.Expired': 'expired',
  },
};

/** Exchange Online, Outlook.com: phrases of its NDR reference, when the reply names a Microsoft host. */
const MICROSOFT_PHRASES: CodeRule = {
  name: 'Microsoft',
  gate: /outlook\.com|hotmail\.|\blive\.com|\bmsn\.com|microsoft\.com/i,
  phrases: [
    {
      reason: 'authfailure',
      includes: [
        'must pass either spf or dkim validation, this message is not signed',
        'the message was rejected because of sender policy framework violation',
        'does not pass dmarc verification',
        "doesn't meet the required authentication level",
      ],
    },
    { reason: 'badreputation', includes: ['has been temporarily rate limited due to ip reputation'] },
    {
      reason: 'blocked',
      includes: [
        'access denied, please try again later',
        'must have a reverse dns record',
        'access denied, bad helo',
        'access denied, rejected by recipient',
        'does not accept email over ipv6',
        'access denied, banned sender',
        'using customer block list',
        'access denied, banned sending ip ',
        'part of their network is on our block list (s3150)',
      ],
    },
    {
      reason: 'mesgtoobig',
      includes: [
        'resolver.rst.recipsizelimit; message too large for this recipient',
        'message size exceeds fixed maximum message size',
        'message too big for system',
      ],
    },
    { reason: 'expired', includes: ['queue expired; message expired', 'message expired'] },
  ],
};

/**
 * Microsoft: [status (or "5.7." with a range of the third number), low, high, phrase, reason, mode]. Notices are read
 * with Sisimai 5.1.0's Rhost::Microsoft (entries without a mode, and `notice`), live replies with go-sisimai's and the
 * reader's wording (without a mode, and `live`): docs/inbound.md, "Session 22".
 */
const MICROSOFT: readonly (readonly [string, number, number, string, R, TableMode?])[] = [
  ['4.7.26', 0, 0, 'must pass either spf or dkim validation, this message is not signed', 'authfailure'],
  ['5.7.23', 0, 0, 'the message was rejected because of sender policy framework violation', 'authfailure'],
  ['5.7.509', 0, 0, 'does not pass dmarc verification', 'authfailure'],
  ['5.7.515', 0, 0, "doesn't meet the required authentication level", 'authfailure', 'live'],
  // Outlook.com's own wording (techcommunity.microsoft.com, "Outlook's new requirements for high-volume senders", 2025)
  ['5.7.515', 0, 0, 'does not meet the required authentication level', 'authfailure', 'live'],
  ['4.7.650', 0, 0, 'has been temporarily rate limited due to ip reputation', 'badreputation'],
  ['4.4.2', 0, 0, 'connection dropped', 'blocked'],
  ['4.7.', 850, 899, 'access denied, please try again later', 'blocked'],
  ['5.7.25', 0, 0, 'must have a reverse dns record', 'blocked'],
  ['5.7.506', 0, 0, 'access denied, bad helo', 'blocked'],
  ['5.7.507', 0, 0, 'access denied, rejected by recipient', 'blocked'],
  ['5.7.510', 0, 0, 'does not accept email over ipv6', 'blocked'],
  ['5.7.511', 0, 0, 'access denied, banned sender', 'blocked'],
  ['5.7.513', 0, 0, 'using customer block list', 'blocked'],
  ['5.7.', 606, 649, 'access denied, banned sending ip ', 'blocked'],
  ['4.7.', 500, 699, 'access denied, please try again later', 'blocked'],
  ['5.5.4', 0, 0, 'invalid domain name', 'blocked'],
  ['5.7.1', 0, 0, 'part of their network is on our block list (s3150)', 'blocked'],
  ['5.3.0', 0, 0, 'too many related errors', 'contenterror'],
  ['5.6.11', 0, 0, 'invalid characters', 'contenterror'],
  ['5.4.11', 0, 0, 'agent generated message depth exceeded', 'contenterror'],
  ['5.5.6', 0, 0, 'invalid message content', 'contenterror'],
  ['5.2.3', 0, 0, 'resolver.rst.recipsizelimit; message too large for this recipient', 'exceedlimit'],
  ['5.3.4', 0, 0, 'message size exceeds fixed maximum message size', 'mesgtoobig'],
  ['5.3.4', 0, 0, 'message too big for system', 'mesgtoobig'],
  ['4.4.1', 0, 0, 'connection timed out', 'expired'],
  ['4.4.7', 0, 0, 'message delayed', 'expired'],
  ['4.4.7', 0, 0, 'queue expired; message expired', 'expired'],
  ['4.4.7', 0, 0, 'message expired', 'expired'],
  ['5.4.300', 0, 0, 'message expired', 'expired'],
  ['5.4.316', 0, 0, 'message expired', 'expired', 'live'],
  // failedstarttls in Sisimai 5.2+; securityerror before
  ['4.4.8', 0, 0, ' failed mta-sts validation', 'securityerror', 'live'],
  ['5.4.8', 0, 0, ' failed mta-sts validation', 'securityerror', 'live'],
  ['4.4.317', 0, 0, 'starttls is required to send mail', 'securityerror'],
  ['5.4.317', 0, 0, 'starttls is required to send mail', 'securityerror'],
  ['4.7.5', 0, 0, 'remote certificate failed mta-sts validation', 'securityerror', 'live'],
  ['5.7.5', 0, 0, 'remote certificate failed mta-sts validation', 'securityerror', 'live'],
  ['5.7.51', 0, 0, 'restrictdomainstoipaddresses or restrictdomainstocertificate', 'securityerror', 'live'],
  ['4.7.321', 0, 0, 'starttls-not-supported:', 'securityerror', 'live'],
  ['5.7.321', 0, 0, 'starttls-not-supported:', 'securityerror', 'live'],
  ['5.7.322', 0, 0, 'certificate-expired:', 'securityerror', 'live'],
  ['4.7.323', 0, 0, 'tlsa-invalid:', 'securityerror', 'live'],
  ['5.7.323', 0, 0, 'tlsa-invalid:', 'securityerror', 'live'],
  ['4.7.324', 0, 0, 'dnssec-invalid:', 'securityerror', 'live'],
  ['5.7.324', 0, 0, 'dnssec-invalid:', 'securityerror', 'live'],
  ['4.7.325', 0, 0, 'certificate-host-mismatch:', 'securityerror', 'live'],
  ['5.7.325', 0, 0, 'certificate-host-mismatch:', 'securityerror', 'live'],
  ['5.2.2', 0, 0, 'mailbox full', 'mailboxfull'],
  ['5.4.4', 0, 0, 'smtpsend.dns.nonexistentdomain; nonexistent domain', 'networkerror'],
  ['5.4.6', 0, 0, 'hop count exceeded - possible mail loop', 'networkerror'],
  ['4.4.312', 0, 0, 'dns query failed', 'networkerror', 'live'],
  ['5.4.312', 0, 0, 'dns query failed', 'networkerror', 'live'],
  ['4.4.316', 0, 0, 'connection refused', 'networkerror'],
  ['5.4.316', 0, 0, 'connection refused', 'networkerror', 'live'],
  ['5.4.4', 0, 0, 'invalid arguments', 'networkerror'],
  ['5.4.6', 0, 0, 'routing loop detected', 'networkerror'],
  ['5.4.14', 0, 0, 'routing loop detected', 'networkerror'],
  ['5.7.1', 0, 0, 'unable to relay', 'norelaying'],
  ['5.7.1', 0, 0, 'client was not authenticated', 'norelaying'],
  ['5.4.1', 0, 0, 'relay access denied', 'norelaying'],
  ['5.7.64', 0, 0, 'tenantattribution; relay access denied', 'norelaying'],
  ['5.4.310', 0, 0, 'does not exist', 'norelaying'],
  ['4.3.2', 0, 0, 'system not accepting network messages', 'notaccept'],
  ['4.4.4', 0, 0, 'hosted tenant which has no mail-enabled subscriptions', 'notaccept'],
  ['5.3.2', 0, 0, 'storedrv.deliver: missing or bad storedriver mdb properties', 'notaccept'],
  ['5.0.350', 0, 0, 'x-dg-ref header is too long', 'policyviolation'],
  ['5.0.350', 0, 0, 'requested action not taken: policy violation detected (as345)', 'policyviolation'],
  ['5.7.', 900, 999, 'delivery not authorized, message refused', 'policyviolation'],
  ['5.1.7', 0, 0, 'invalid address', 'rejected'],
  ['5.1.7', 0, 0, 'unknown sender address', 'rejected'],
  ['5.1.0', 0, 0, 'sender denied', 'rejected'],
  ['5.1.8', 0, 0, 'access denied, bad outbound sender', 'rejected'],
  ['5.7.1', 0, 0, 'delivery not authorized', 'rejected'],
  ['5.7.12', 0, 0, 'sender was not authenticated by organization', 'rejected'],
  ['5.7.124', 0, 0, 'sender not in allowed-senders list', 'rejected'],
  ['5.7.133', 0, 0, 'sender not authenticated for group', 'rejected'],
  ['5.7.134', 0, 0, 'sender was not authenticated for mailbox', 'rejected'],
  ['5.7.13', 0, 0, 'sender was not authenticated for public folder', 'rejected'],
  ['5.7.135', 0, 0, 'sender was not authenticated for public folder', 'rejected'],
  ['5.7.136', 0, 0, 'sender was not authenticated', 'rejected'],
  ['5.7.', 501, 503, 'access denied, spam abuse detected', 'rejected'],
  ['5.7.512', 0, 0, 'access denied, message must be rfc 5322 section 3.6.2 compliant', 'rejected'],
  ['5.7.750', 0, 0, 'service unavailable. client blocked from sending from unregistered domains', 'rejected'],
  ['5.7.', 501, 503, 'access denied, banned sender', 'rejected'],
  ['5.7.3', 0, 0, 'cannot achieve exchange server authentication', 'securityerror'],
  ['5.7.3', 0, 0, 'not authorized', 'securityerror'],
  ['5.7.1', 0, 0, 'client was not authenticated', 'securityerror'],
  ['5.7.57', 0, 0, 'client was not authenticated to send anonymous mail during mail from', 'securityerror'],
  ['5.2.1', 0, 0, 'content filter agent quarantined this message', 'spamdetected'],
  // ratelimited in Sisimai 5.2+; toomanyconn (recipients, connections) or speeding (rates) before
  ['5.5.3', 0, 0, 'too many recipients', 'toomanyconn'],
  ['4.3.2', 0, 0, 'storedrv.deliver; recipient thread limit exceeded', 'toomanyconn', 'live'],
  ['4.5.3', 0, 0, 'too many recipients', 'toomanyconn'],
  ['4.7.652', 0, 0, 'has exceeded the maximum number of connections', 'toomanyconn', 'live'],
  ['5.1.90', 0, 0, 'reached your daily limit for message recipients', 'speeding', 'live'],
  ['5.2.2', 0, 0, 'submission quota exceeded', 'speeding'],
  ['5.2.121', 0, 0, "recipient's per hour message receive limit", 'speeding', 'live'],
  ['5.2.122', 0, 0, "recipient's per hour message receive limit", 'speeding', 'live'],
  ['5.2.122', 0, 0, 'the recipient has exceeded their limit for', 'speeding', 'live'],
  ['5.7.508', 0, 0, 'has exceeded permitted limits within', 'speeding'],
  ['5.7.', 700, 749, 'tenant has exceeded threshold', 'speeding', 'live'],
  // the sending IP is refused (learn.microsoft.com Exchange Online NDR reference, 5.7.708); speeding in Sisimai
  ['5.7.', 700, 749, 'traffic not accepted from this ip', 'blocked', 'live'],
  ['5.7.504', 0, 0, 'recipient address rejected: access denied', 'suspend'],
  ['5.7.505', 0, 0, 'access denied, banned recipient', 'suspend'],
  ['5.2.1', 0, 0, 'mailbox cannot be accessed', 'suspend'],
  ['5.3.3', 0, 0, 'unrecognized command', 'syntaxerror'],
  ['5.5.2', 0, 0, 'send hello first', 'syntaxerror'],
  ['4.3.2', 0, 0, 'service not available', 'systemerror'],
  ['4.3.2', 0, 0, 'service not active', 'systemerror'],
  ['5.3.5', 0, 0, 'system incorrectly configured', 'systemerror'],
  ['5.3.190', 0, 0, 'when journaling archive is disabled', 'systemerror', 'live'],
  ['5.0.0', 0, 0, 'helo / ehlo requires domain address', 'systemerror'],
  ['5.1.4', 0, 0, 'destination mailbox address ambiguous', 'systemerror'],
  ['5.2.4', 0, 0, 'mailing list expansion problem', 'systemerror'],
  ['5.2.14', 0, 0, 'misconfigured forwarding address', 'systemerror'],
  ['4.4.', 22, 28, 'message failed to be replicated:', 'systemerror', 'live'],
  ['4.4.3', 0, 0, 'temporary server error. please try again later attr18', 'systemerror'],
  ['4.7.0', 0, 0, 'temporary server error. please try again later. prx4 nexthop:', 'systemerror'],
  ['4.4.318', 0, 0, '(suspiciousremoteservererror)', 'systemerror'],
  ['5.4.318', 0, 0, '(suspiciousremoteservererror)', 'systemerror'],
  // Outlook.com throttles the sending IP (learn.microsoft.com NDR reference, 4.7.500-699); systemerror in Sisimai
  ['4.7.500', 0, 0, 'server busy. please try again later from ', 'speeding', 'live'],
  ['4.7.700', 0, 0, 'pfa agent busy, please try again.', 'systemerror'],
  ['4.3.1', 0, 0, 'insufficient system resources', 'systemfull'],
  ['5.1.1', 0, 0, 'resolver.adr.exrecipnotfound; not found', 'userunknown'],
  ['5.1.1', 0, 0, 'user unknown', 'userunknown'],
  ['5.1.3', 0, 0, 'storedrv.submit; invalid recipient address', 'userunknown'],
  ['5.1.', 4, 5, 'recipient address reserved by rfc 2606', 'userunknown'],
  ['5.1.6', 0, 0, 'recipient addresses in single label domains not accepted', 'userunknown'],
  ['5.1.1', 0, 0, 'bad destination mailbox address', 'userunknown'],
  ['5.1.10', 0, 0, 'recipient not found', 'userunknown'],
  ['5.4.1', 0, 0, 'recipient address rejected: access denied', 'userunknown'],
  ['5.5.0', 0, 0, 'requested action not taken: mailbox unavailable', 'userunknown'],
  ['5.1.2', 0, 0, 'invalid x.400 address', 'userunknown'],
  ['5.1.351', 0, 0, 'remote server returned unknown recipient or mailbox unavailable', 'userunknown', 'live'],
  // Sisimai 5.1.0's own entries the reader's (go-sisimai's) table words otherwise: read in notices only
  ['4.7.323', 0, 0, 'tlsa-invalid: The domain failed dane validation', 'authfailure', 'notice'],
  ['5.7.323', 0, 0, 'tlsa-invalid: The domain failed dane validation', 'authfailure', 'notice'],
  ['4.7.324', 0, 0, 'dnssec-invalid: destination domain returned invalid dnssec records', 'authfailure', 'notice'],
  ['5.7.324', 0, 0, 'dnssec-invalid: destination domain returned invalid dnssec records', 'authfailure', 'notice'],
  [
    '4.7.325',
    0,
    0,
    'certificate-host-mismatch: remote certificate must have a common name or subject alternative name matching the hostname (dane)',
    'authfailure',
    'notice',
  ],
  [
    '5.7.325',
    0,
    0,
    'certificate-host-mismatch: remote certificate must have a common name or subject alternative name matching the hostname (dane)',
    'authfailure',
    'notice',
  ],
  ['5.7.322', 0, 0, "certificate-expired: destination mail server's certificate is expired", 'authfailure', 'notice'],
  ['5.7.51', 0, 0, 'restrictdomainstoipaddresses or restrictdomainstocertificate', 'blocked', 'notice'],
  [
    '4.7.321',
    0,
    0,
    'starttls-not-supported: destination mail server must support tls to receive mail',
    'securityerror',
    'notice',
  ],
  [
    '5.7.321',
    0,
    0,
    'starttls-not-supported: destination mail server must support tls to receive mail',
    'securityerror',
    'notice',
  ],
  ['4.3.2', 0, 0, 'storedrv.deliver; recipient thread limit exceeded', 'speeding', 'notice'],
  [
    '5.1.90',
    0,
    0,
    "your message can't be sent because you've reached your daily limit for message recipients",
    'speeding',
    'notice',
  ],
  ['5.2.121', 0, 0, "recipient's per hour message receive limit from specific sender exceeded", 'speeding', 'notice'],
  ['5.2.122', 0, 0, "recipient's per hour message receive limit exceeded", 'speeding', 'notice'],
  ['5.7.', 700, 749, 'access denied, tenant has exceeded threshold', 'speeding', 'notice'],
  ['5.7.', 700, 749, 'access denied, traffic not accepted from this ip', 'speeding', 'notice'],
  [
    '5.3.190',
    0,
    0,
    'journaling on-premises messages to microsoft 365 or office 365 not supported when journaling archive is disabled',
    'systemerror',
    'notice',
  ],
  ['4.4.24', 0, 0, 'message failed to be replicated: insufficient system resource:', 'systemerror', 'notice'],
  [
    '4.4.25',
    0,
    0,
    'message failed to be replicated: no healthy secondary server available to accept replica at this time.',
    'systemerror',
    'notice',
  ],
  ['4.4.28', 0, 0, 'message failed to be replicated: the operation was canceled', 'systemerror', 'notice'],
  ['4.7.500', 0, 0, 'server busy. please try again later from ', 'systemerror', 'notice'],
  ['5.2.122', 0, 0, 'the recipient has exceeded their limit for', 'toomanyconn', 'notice'],
];
/** Outlook.com postmaster codes ("SC-001"), valid with the reply code given. */
const MICROSOFT_CODES: Readonly<Record<string, [string, R]>> = {
  'RP-001': ['421', 'badreputation'],
  'RP-002': ['421', 'badreputation'],
  'RP-003': ['421', 'badreputation'],
  'SC-001': ['550', 'badreputation'],
  'SC-002': ['550', 'policyviolation'],
  'SC-003': ['550', 'blocked'],
  'SC-004': ['550', 'blocked'],
  'DY-001': ['550', 'blocked'],
  'OU-001': ['550', 'blocked'],
  'OU-002': ['550', 'badreputation'],
};

function microsoftReason(i: ProviderInput, text: string): R | null {
  const st = i.status;
  if (!st) return null;
  const third = Number(st.split('.')[2]);
  for (const [code, lo, hi, phrase, reason, mode] of MICROSOFT) {
    if (!readsEntry(i, mode)) continue;
    if (lo === hi ? st !== code : !st.includes(code) || third < lo || third > hi) continue;
    if (text.includes(phrase)) return reason;
  }
  for (const [code, [reply, reason]] of Object.entries(MICROSOFT_CODES)) {
    if (i.text.includes(code) && i.replycode === reply) return reason;
  }
  return null;
}

const OUTLOOK: Phrases = [
  ['hostunknown', ['The mail could not be delivered to the recipient because the domain is not reachable']],
  ['userunknown', ['Requested action not taken: mailbox unavailable']],
];

const OFFICE365: NoticeFormat = {
  family: 'Office365',
  need: 2,
  detect: {
    subject: /Undeliverable:|Onbestelbaar:|Não_entregue:|N=C3=A3o_entregue:/,
    headers: [
      'x-ms-exchange-message-is-ndr',
      'x-microsoft-antispam-prvs',
      'x-exchange-antispam-report-test',
      'x-exchange-antispam-report-cfa-test',
      'x-ms-exchange-crosstenant-originalarrivaltime',
      'x-ms-exchange-crosstenant-fromentityheader',
      'x-ms-exchange-transport-crosstenantheadersstamped',
    ],
    received: /\.(?:outbound\.protection|prod)\.outlook\.com\b/,
    messageId: /\.(?:outbound\.protection|prod)\.outlook\.com\b/,
  },
  end: [/^Original [Mm]essage [Hh]eaders:?/m, /^Message Hops/m, /^Oorspronkelijke berichtkoppen:/m],
  statuses: [
    [/^4\.4\.7$/, 'expired'],
    [/^4\.4\.312$/, 'networkerror'],
    [/^4\.4\.316$/, 'expired'],
    [/^4\.7\.26$/, 'authfailure'],
    [/^4\.7\.[56]\d\d$/, 'blocked'],
    [/^4\.7\.8[5-9]\d$/, 'blocked'],
    [/^5\.0\.350$/, 'contenterror'],
    [/^5\.1\.10$/, 'userunknown'],
    [/^5\.4\.1$/, 'norelaying'],
    [/^5\.4\.6$/, 'networkerror'],
    [/^5\.4\.312$/, 'networkerror'],
    [/^5\.4\.316$/, 'expired'],
    [/^5\.6\.11$/, 'contenterror'],
    [/^5\.7\.1$/, 'rejected'],
    [/^5\.7\.1[23]$/, 'rejected'],
    [/^5\.7\.124$/, 'rejected'],
    [/^5\.7\.13[3-6]$/, 'rejected'],
    [/^5\.7\.23$/, 'blocked'],
    [/^5\.7\.25$/, 'networkerror'],
    [/^5\.7\.50[1-3]$/, 'spamdetected'],
    [/^5\.7\.50[45]$/, 'filtered'],
    [/^5\.7\.50[67]$/, 'blocked'],
    [/^5\.7\.508$/, 'toomanyconn'],
    [/^5\.7\.509$/, 'authfailure'],
    [/^5\.7\.510$/, 'notaccept'],
    [/^5\.7\.511$/, 'rejected'],
    [/^5\.7\.512$/, 'policyviolation'],
    [/^5\.7\.57$/, 'securityerror'],
    [/^5\.7\.60[6-9]$/, 'blocked'],
    [/^5\.7\.6[1-4]\d$/, 'blocked'],
    [/^5\.7\.7[0-4]\d$/, 'toomanyconn'],
  ],
};
const EXCHANGE2007: NoticeFormat = {
  family: 'Exchange2007',
  detect: { subject: /^Undeliverable:/ },
  end: [/^Original message headers:/m],
};
/** Outlook.com/Hotmail DSNs */
const OUTLOOK_NOTICE: NoticeFormat = {
  family: 'Outlook',
  need: 2,
  detect: { from: /postmaster@(?:mail\.)?hotmail\.com/i, subject: /Delivery Status Notification/ },
  reasons: asReasons(OUTLOOK),
};

export const MICROSOFT_PROVIDERS: readonly Provider[] = [
  {
    name: 'Microsoft',
    hosts: ['.prod.outlook.com', '.protection.outlook.com', '.onmicrosoft.com', '.exchangelabs.com'],
    byHost: (i) => microsoftReason(i, i.text.toLowerCase()),
    codeRules: [EXCHANGE_NDR, MICROSOFT_PHRASES],
    notices: [OFFICE365, EXCHANGE2007],
  },
  // Aol, MessageLabs and Outlook phrases are matched case-sensitively, as Sisimai does.
  { name: 'Outlook', hosts: ['.hotmail.com'], byHost: (i) => byPhrase(OUTLOOK, i.text), notices: [OUTLOOK_NOTICE] },
];
