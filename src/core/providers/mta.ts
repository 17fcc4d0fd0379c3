// MTA families in the provider registry: the notice formats of mail servers and appliances (Exim, Courier,
// Lotus Notes, qmail, m-FILTER, ...; Sisimai Lhost modules, BSD-2-Clause) and phrases several MTAs share. Pure data.
import type { BounceReason } from '../bounce-reasons.js';
import { type NoticeFormat, type Provider, type VendorPhrases } from './types.js';

/** Exim's error texts (deliver.c, routers, transports) → reason; MXLogic and Mail.ru reuse Exim. */
const EXIM_REASONS: NoticeFormat['reasons'] = [
  { reason: 'userunknown', phrases: ['user not found'] },
  {
    reason: 'hostunknown',
    phrases: [
      'all host address lookups failed permanently',
      'all relevant MX records point to non-existent hosts',
      'Unrouteable address',
    ],
  },
  { reason: 'mailboxfull', phrases: ['mailbox is full', 'error: quota exceed'] },
  {
    reason: 'notaccept',
    phrases: ['an MX or SRV record indicated no SMTP service', 'no host found for existing SMTP connection'],
  },
  {
    reason: 'syntaxerror',
    phrases: [
      'angle-brackets nested too deep',
      'expected word or "<"',
      'domain missing in source-routed address',
      'malformed address:',
    ],
  },
  {
    reason: 'systemerror',
    phrases: ['delivery to file forbidden', 'delivery to pipe forbidden', 'local delivery failed', 'LMTP error after '],
  },
  { reason: 'contenterror', phrases: ['Too many "Received" headers'] },
  {
    reason: 'expired',
    phrases: [
      'retry timeout exceeded',
      'No action is required on your part',
      'retry time not reached for any host after a long failure period',
      'all hosts have been failing for a long time and were last tried',
      'Delay reason: ',
      'has been frozen',
      'was frozen on arrival by ',
    ],
  },
  // a pipe the address led to failed ("  pipe to |/usr/bin/prog"), when nothing above names the cause (Sisimai Exim)
  { reason: 'mailererror', phrases: ['pipe to |'] },
];

const NOTICES: readonly NoticeFormat[] = [
  {
    family: 'MailRu',
    need: 3,
    detect: {
      from: /mailer-daemon@(?:(?!mailer-daemon@).)*mail\.ru/i,
      messageId: /\.mail\.ru>|smailru\.net>/,
      subject:
        /Delivery Status Notification|Mail delivery failed|Mail failure|Message frozen|Warning: message |error\(s\) in forwarding or filtering/,
    },
    end: [/^------ This is a copy of the message, including all the headers\. ------/m],
    reasons: [
      { reason: 'expired', phrases: ['retry timeout exceeded', 'No action is required on your part'] },
      { reason: 'userunknown', phrases: ['user not found'] },
      {
        reason: 'hostunknown',
        phrases: [
          'all host address lookups failed permanently',
          'all relevant MX records point to non-existent hosts',
          'Unrouteable address',
        ],
      },
      { reason: 'mailboxfull', phrases: ['mailbox is full', 'error: quota exceed'] },
      {
        reason: 'notaccept',
        phrases: ['an MX or SRV record indicated no SMTP service', 'no host found for existing SMTP connection'],
      },
      {
        reason: 'systemerror',
        phrases: ['delivery to file forbidden', 'delivery to pipe forbidden', 'local delivery failed'],
      },
      { reason: 'contenterror', phrases: ['Too many "Received" headers '] },
    ],
  },
  {
    family: 'MXLogic',
    detect: { headers: ['x-mx-bounce', 'x-mxl-hash', 'x-mxl-notehash'] },
    end: [/^Included is a copy of the message header:/m],
    reasons: EXIM_REASONS,
  },
  {
    family: 'Exim',
    need: 2,
    detect: {
      from: /^Mail Delivery System/,
      messageId: /^<[0-9A-Za-z]{7}-[0-9A-Za-z]{6}-[0-9A-Za-z]{2}@/,
      subject:
        /^(?:Mail delivery failed|Mail failure|Message frozen|Warning: message .+ delayed|error\(s\) in forwarding or filtering)/,
      received: /with local \(Exim \d/,
    },
    end: [/^-+ This is a copy of (?:the|your) message/m],
    startLines:
      /This message was created automatically by mail delivery software\.|A message that you sent (?:was rejected by the local scannning code|contained one or more recipient addresses |could not be delivered to all of its recipients)| has been frozen| was frozen on arrival| router encountered the following error\(s\):/,
    reasons: EXIM_REASONS,
    commands: { HELO: 'blocked', EHLO: 'blocked', MAIL: 'onhold' },
    temporaryWithoutCode: ['expired', 'mailboxfull'],
    textHoldsDiagnostic: true,
  },
  {
    family: 'Courier',
    detect: {
      from: /Courier mail server at /,
      subject: /NOTICE: mail delivery status\.|WARNING: delayed mail\./,
      messageId: /^<courier\.[0-9A-F]+\./,
    },
    reasons: [
      { reason: 'hostunknown', phrases: ['No such domain.'] },
      { reason: 'systemerror', phrases: ["This domain's DNS violates RFC 1035."] },
      { reason: 'networkerror', phrases: ['DNS lookup failed.'] },
    ],
  },
  {
    family: 'mFILTER',
    need: 2,
    detect: { subject: /^failure notice$/, xMailer: /^m-FILTER$/ },
    end: [/^-------original message/m, /^-------original mail info/m],
  },
  {
    family: 'MailMarshalSMTP',
    detect: { subject: /^Undeliverable Mail: "/ },
    end: [/^Additional Information$/m, /^'?\+{60,}/m],
  },
  {
    family: 'MailFoundry',
    need: 2,
    detect: { subject: /^Message delivery has failed$/, received: /\(MAILFOUNDRY\) id/ },
  },
  {
    // HCL (Lotus) Domino: "DELIVERY FAILURE: ..." (Sisimai Lhost::Domino). Its "Cannot route mail to user" is
    // filtered only in Domino's own notices, not in a gateway's DSN quoting Notes (X-Notes; ...) under Status 5.1.1;
    // its userunknown and systemerror texts are read everywhere (VENDOR_PHRASES)
    family: 'Domino',
    detect: { subject: /^DELIVERY[ _]FAILURE:/ },
    reasons: [{ reason: 'filtered', phrases: ['Cannot route mail to user'] }],
  },
  {
    family: 'Notes',
    detect: { subject: /^Undeliverable message/ },
    end: [/^------- Returned Message --------/m],
    reasons: [
      { reason: 'networkerror', phrases: ['Message has exceeded maximum hop count'] },
      {
        reason: 'userunknown',
        phrases: ['User not listed in public Name & Address Book', 'ディレクトリのリストにありません'],
      },
    ],
  },
  {
    family: 'Verizon',
    detect: { from: /post_master@vtext\.com|sysadmin@(?:(?!sysadmin@).)*\.vzwpix\.com/ },
    end: [/^Original Message:/m],
    reasons: [
      {
        reason: 'userunknown',
        phrases: ['550 - Requested action not taken: no such user here', 'No valid recipients'],
      },
    ],
  },
  {
    // CommuniGate Pro: "Failed to deliver to '<a@b>'" then "SMTP module(domain d) reports:" / "LOCAL module(account
    // a) reports:"; Message-ID <receipt-N@host>, boundary "_===N====host===_"; its multipart/report's
    // delivery-status part carries no Diagnostic-Code (a relay's Received header is no sign: lists pass through it)
    family: 'CommuniGate',
    detect: {
      body: /^(?:SMTP|LOCAL|LIST|PIPE|RULES?|ROUTER|DEQUEUER) module\([^()\n]{1,200}\) reports:/m,
      messageId: /^<?receipt-\d+@/,
      contentType: /boundary="?_===\d+====/,
    },
    statusOnly: true,
  },
  {
    family: 'X1',
    need: 2,
    detect: { subject: /^Returned Mail: /, from: /^"Mail Deliver System" / },
  },
  {
    family: 'X2',
    detect: { subject: /^(?:Delivery failure|failure delivery|failed delivery)/ },
    opens: /^Unable to deliver message to the following address/m,
    end: [/^--- Original message follows\./m],
  },
  {
    family: 'X3',
    need: 2,
    detect: { from: /^Mail Delivery System/, subject: /^Delivery status notification/ },
    ownLine: true, // an error is the text after "  * address"; none there: no cause given
  },
  {
    family: 'X4',
    detect: {
      subject: /^failure notice/,
      received: /\(qmail \d+ invoked (?:for bounce|from network)\)/,
    },
    linesAfter: true,
    reasons: [
      {
        reason: 'suspend',
        phrases: ['Mailaddress is administratively disabled', 'Mailaddress is administrativley disabled'],
      },
      { reason: 'exceedlimit', phrases: ['The message exeeded the maximum size the user accepts'] },
      { reason: 'mailboxfull', phrases: ['disk quota exceeded'] },
      { reason: 'mesgtoobig', phrases: ['Message size exceeds fixed maximum message size:'] },
      { reason: 'hostunknown', phrases: ["Sorry, I couldn't find any host "] },
      { reason: 'systemfull', phrases: ['Requested action not taken: mailbox unavailable (not enough free space)'] },
      {
        reason: 'networkerror',
        phrases: [
          "Sorry, I wasn't able to establish an SMTP connection",
          "Sorry. Although I'm listed as a best-preference MX or A for that host",
        ],
      },
      // notqmail 1.08 on a null MX (go-sisimai qmail)
      { reason: 'notaccept', phrases: ["Sorry, I couldn't find a mail exchanger or IP address"] },
      // qmail-ldap-1.03-20040101.patch (go-sisimai qmail)
      {
        reason: 'systemerror',
        phrases: [
          'Automatic homedir creator crashed',
          'Illegal value in LDAP attribute',
          'LDAP attribute is not given but mandatory',
          'Timeout while performing search on LDAP server',
          'Too many results returned but needs to be unique',
          'Permanent error while executing qmail-forward',
          'Temporary error in automatic homedir creation',
          'Temporary error while executing qmail-forward',
          'Temporary failure in LDAP lookup',
          'Unable to contact LDAP server',
          'Unable to login into LDAP server, bad credentials',
          'bad interpreter: No such file or directory',
        ],
      },
      { reason: 'userunknown', phrases: ['no mailbox here by that name'] },
    ],
  },
  {
    family: 'X6',
    detect: { subject: /^There was an error sending your mail/ },
    end: [/^The attachment contains the original mail headers/m],
  },
  {
    family: 'OpenSMTPD',
    need: 2,
    detect: { subject: /Delivery status notification/, received: / \(OpenSMTPD\) with / },
    end: [/^[ \t]*Below is a copy of the original message:/m],
    // OpenSMTPD 7.x adds a delivery-status part (Status 4.0.0/5.0.0 only); Sisimai reads its text (go-sisimai)
    textOnly: true,
    // smtpd/queue.c and mta.c failure strings (Sisimai Lhost::OpenSMTPD)
    reasons: [
      { reason: 'expired', phrases: ['Envelope expired'] },
      { reason: 'securityerror', phrases: ['Could not retrieve credentials'] },
      { reason: 'hostunknown', phrases: ['Invalid domain name', 'Domain does not exist'] },
      {
        reason: 'networkerror',
        phrases: [
          'Address family mismatch on destination MXs',
          'All routes to destination blocked',
          'bad DNS lookup error code',
          'Could not retrieve source address',
          'Loop detected',
          'Network error on destination MXs',
          'No valid route to remote MX',
          'No valid route to destination',
          'Temporary failure in MX lookup',
        ],
      },
      {
        reason: 'notaccept',
        phrases: ['Destination seem to reject all mails', 'No MX found for domain', 'No MX found for destination'],
      },
    ],
  },
  {
    // DragonFly Mail Agent (dma): its own failure strings (Sisimai Lhost::DragonFly)
    family: 'DragonFly',
    need: 2,
    detect: { subject: /Mail delivery failed/, received: / \(DragonFly Mail Agent/ },
    end: [/^[ \t]*Original message follows\./m, /^[ \t]*Message headers follow/m],
    reasons: [
      { reason: 'expired', phrases: ['Could not deliver for the last '] },
      { reason: 'hostunknown', phrases: ['DNS lookup failure: host '] },
    ],
  },
  { family: 'MessagingServer', detect: { contentType: /Boundary_\(ID_/, subject: /^Delivery Notification: / } },
  {
    family: 'V5sendmail',
    detect: { subject: /^Returned mail: / },
    end: [/^[ \t]*-+ Unsent message follows -+/m, /^[ \t]*-+ No message was collected -+/m],
  },
];

/**
 * Texts of Exchange, Lotus Notes/Domino, IMail, qmail, Google Groups/Workspace... whose meaning overrides the generic
 * reading: [reason, phrases, the decoders that read them]. In Sisimai 5.1.0 each is in one vendor decoder's own table
 * (Lhost module), read only when that decoder reads the notice; here a decoder is a notice format's family, a
 * GENERIC_LHOST_SIGNS family, or `generic` (Sisimai's RFC 3464 decoder, which also stands in for the vendors the reader
 * has no format of, such as Domino; GSuite and GoogleGroups notices come from googlemail.com, read as `Gmail`). A
 * Postfix, Sendmail or Exim notice relaying "550 Unknown recipient" is read with the generic lists, as Sisimai's
 * decoder of that notice reads it. A live reply (no decoder) is read with all of them.
 */
const VENDOR_PHRASES: VendorPhrases = [
  // go-sisimai's; no table of Sisimai 5.1.0 holds it (its Office365 decoder reads the 5.1.10 status): a DSN of another
  // MTA relaying it has no decoder's reason, so with no SMTP command its user-unknown text reads filtered (soft)
  ['userunknown', ['resolver.adr.recipientnotfound'], ['Office365']],
  ['userunknown', ['resolver.adr.recipnotfound'], ['Exchange2007', 'generic']],
  // Exchange2003's (its notices pass the reader's Exchange2007 format, "Undeliverable:", or show its headers:
  // UNFORMATTED_DECODER_SIGNS) and Office365's; Sisimai's RFC 3464 decoder reads them with the generic lists
  [
    'userunknown',
    ['unknown recipient', 'the recipient name is not recognized'],
    ['Office365', 'Exchange2007', 'Exchange2003'],
  ],
  // IMail's own (its "unknown user:" is read by its notice format; Sisimai has no generic "unknown user:")
  ['userunknown', ['invalid final delivery userid'], ['IMailServer', 'generic']],
  [
    'userunknown',
    ['not listed in domino directory', 'not listed in public name & address book'],
    ['Domino', 'Notes', 'generic'],
  ],
  ['userunknown', ["because the address couldn't be found"], ['Gmail', 'generic']],
  ['networkerror', [' had no relevant answers', ' responded with code nxdomain'], ['Gmail', 'generic']],
  ['systemerror', ['several matches found in domino directory'], ['Domino', 'generic']],
  // go-sisimai's (not in Sisimai 5.1.0)
  ['hostunknown', ['resolver.adr.baddomain'], ['Office365', 'Exchange2007', 'generic']],
  ['blocked', ['but my name was rejected'], ['qmail', 'X4', 'Exim', 'MailRu', 'MXLogic', 'generic']],
  ['rejected', ['the group you tried to contact', 'groups.google.com/support'], ['Gmail', 'generic']],
  // go-sisimai's (not in Sisimai 5.1.0)
  ['notaccept', ['returned null mx', "doesn't receive email according to the administrator"], ['Gmail', 'generic']],
];

/**
 * Signs of the Sisimai decoders (Lhost modules) the reader reads without a notice format of its own: Amavis,
 * Sendmail, Postfix, qmail, V5sendmail (each module's `inquire` preconditions on From, Subject and Received). A DSN
 * that neither a notice format nor one of these takes is read as Sisimai's generic RFC 3464 decoder reads it.
 */
export const GENERIC_LHOST_SIGNS: readonly {
  family: string;
  subject?: RegExp;
  received?: RegExp;
  from?: RegExp;
  /** the decoder reads nothing unless a line of the notice holds one of these, each in order (Sisimai `aligned`) */
  starts?: readonly (readonly string[])[];
  /** a header the decoder also needs, with a value */
  needs?: string;
}[] = [
  { family: 'Amavis', from: /^"Content-filter at / },
  { family: 'Sendmail', subject: /see transcript for details|^Warning: / },
  {
    family: 'Postfix',
    subject: /^Undelivered Mail Returned to Sender$/,
    // Sisimai::Lhost::Postfix's opening lines (bounce(5)): "This is the mail system at host ...", "The Postfix program"
    starts: [
      ['The ', 'Postfix '],
      ['The ', 'mail system'],
      ['The ', 'program'],
      ['This is the', 'Postfix'],
      ['This is the', 'mail system'],
    ],
  },
  { family: 'Postfix', subject: /.SMTP server: errors from / },
  // Sisimai::Lhost::Yandex: From mailer-daemon@yandex.ru with an X-Yandex-Uniq header
  { family: 'Yandex', from: /^mailer-daemon@yandex\.ru$/, needs: 'x-yandex-uniq' },
  { family: 'qmail', subject: /^failure notice$/, received: /\(qmail \d+ invoked (?:for bounce|from network)\)/ },
  { family: 'V5sendmail', subject: /^Returned mail: / },
];

/**
 * Sisimai's Amazon SES decoder (its `inquire` on an email: an X-AWS-Outgoing or X-SES-Outgoing header, and no
 * "Amazon WorkMail" X-Mailer): when a recipient's Status is x.0.0 or x.1.0, its status is the first one inside the
 * quoted remote reply ("5.1.0 - Unknown address error 550-'5.7.1 ... Access denied' (delivery attempts: 0)" is
 * 5.7.1). Every other decoder takes the first status of the text (5.1.0 there).
 */
export const QUOTED_REPLY_DECODER = {
  family: 'AmazonSES',
  headers: ['x-aws-outgoing', 'x-ses-outgoing'],
  notXMailer: /Amazon WorkMail/,
  statuses: /^[245]\.[01]\.0$/,
} as const;

/**
 * Vendor DSN fields whose value names the reason (a retry-class one is re-read against the text, as in Sisimai):
 * field name (lower-case) → value → reason.
 */
export const DSN_FIELD_REASONS: Readonly<Record<string, Readonly<Record<string, BounceReason>>>> = {
  // PowerMTA (Sisimai RFC3464 third-party PowerMTA)
  'x-powermta-bouncecategory': {
    'bad-domain': 'hostunknown',
    'bad-mailbox': 'userunknown',
    'inactive-mailbox': 'suspend',
    'message-expired': 'expired',
    'no-answer-from-host': 'networkerror',
    'policy-related': 'policyviolation',
    'quota-issues': 'mailboxfull',
    'routing-errors': 'systemerror',
    'spam-related': 'spamdetected',
  },
};

export const MTA_PROVIDERS: readonly Provider[] = [
  ...NOTICES.map((n): Provider => ({ name: n.family, notices: [n] })),
  { name: 'MTA phrases', vendorPhrases: VENDOR_PHRASES },
];
