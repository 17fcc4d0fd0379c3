// Apple iCloud, Facebook and the mail-security gateways (MessageLabs, Mimecast) in the provider registry: the tables
// read when the remote host is theirs (Sisimai Rhost::Apple, Facebook, MessageLabs, Mimecast; BSD-2-Clause). Pure data.
import type { BounceReason } from '../bounce-reasons.js';
import { type Phrases, type Provider, byPhrase } from './types.js';

type R = BounceReason;
/** Apple iCloud: lower-case phrases. */
const APPLE: Phrases = [
  ['authfailure', ['s dmarc policy', 'blocked for failing both spf and dkim autentication checks']],
  [
    'blocked',
    [
      'rejected due to having a domain present in the spamhaus',
      'rejected due to listing in spamhaus',
      'blocked - see https://support.proofpoint.com/dnsbl-lookup',
      'not accepting connections',
    ],
  ],
  ['hasmoved', ['recipient no longer on server']],
  ['mailboxfull', ['user is over quota']],
  ['norelaying', ['relay access denied']],
  ['notaccept', ['host/domain does not accept mail']],
  ['policyviolation', ['due to local policy']],
  ['rejected', ['sender address rejected']],
  ['speeding', ['due to excessive volume']],
  ['userunknown', ['inactive email address', 'user does not exist', 'unknown or illegal alias']],
];
/** Facebook's response codes ("550 5.1.1 RCP-P2 http://postmaster.facebook.com/response_codes..."). */
const FACEBOOK: Readonly<Record<string, R>> = {
  'POL-P7': 'authfailure',
  ...Object.fromEntries(
    ['POL-P1', 'POL-P2', 'POL-P3', 'POL-P4', 'POL-T1', 'POL-T2', 'POL-T3'].map((c) => [c, 'blocked']),
  ),
  'MSG-P2': 'contenterror',
  'RCP-P2': 'filtered',
  'RCP-P3': 'filtered',
  'MSG-P1': 'mesgtoobig',
  'INT-P2': 'mesgtoobig',
  'MSG-P3': 'notcompliantrfc',
  'DNS-P1': 'rejected',
  'DNS-P2': 'rejected',
  'DNS-T1': 'rejected',
  'DNS-P3': 'requireptr',
  'DNS-T2': 'requireptr',
  'POL-P6': 'spamdetected',
  'RCP-T4': 'suspend',
  'RCP-T1': 'systemerror',
  ...Object.fromEntries(['CON-T1', 'CON-T2', 'CON-T3', 'CON-T4', 'MSG-T1'].map((c) => [c, 'toomanyconn'])),
  ...Object.fromEntries(['RCP-P1', 'INT-P1', 'INT-P3', 'INT-P4'].map((c) => [c, 'userunknown'])),
  'POL-P5': 'virusdetected',
};
const FACEBOOK_CODE = /\b([A-Z]{3}-[PT]\d)\b/;

/** MessageLabs: phrases matched case-sensitively, as Sisimai does. */
const MESSAGELABS: Phrases = [
  ['authfailure', ['domain authentication fail']],
  ['badreputation', ['Connection rejected by policy']],
  [
    'blocked',
    [
      'mail rejected because your IP is in the PBL',
      'your IP address has been ',
      'your IP address (ip-addr) has been blocked',
      'your email address (addr) has been blocked',
    ],
  ],
  ['contenterror', ['Stray linefeeds in message']],
  ['securityerror', ['TLS/SSLv3 Connection required']],
  ['norelaying', [' as a relay, ']],
  ['notcompliantrfc', ['550 Requested action aborted [4]', 'has detected that this message is not RFC 5322']],
  [
    'rejected',
    [
      'sender envelope domain not allowed for sender IP address',
      'your domain has been blocked',
      'your email address has been blocked',
      'your envelope sender is in my badmailfrom list',
      'your email address has been blacklisted',
      'your domain has been blacklisted',
    ],
  ],
  ['securityerror', ['Please turn on SMTP Authentication in your mail client']],
  ['spamdetected', ['Message Filtered', 'filtered by Outbound scanning']],
  ['toomanyconn', ['Too many recipients received this hour', 'too many messages']],
  ['userunknown', ['No such user', 'Invalid recipient', 'mailbox is not allowed', 'Recipient mailbox is not allowed']],
  // go-sisimai: "542 <address> Rejected"
  ['userunknown', ['542 ', ' Rejected']],
];
/** Mimecast: [reply code, lower-case phrase]. */
const MIMECAST: readonly [R, string, string][] = [
  ['authfailure', '550', 'spf sender invalid - envelope rejected'],
  ['authfailure', '550', 'dkim sender invalid - envelope rejected'],
  ['authfailure', '550', 'dmarc sender invalid - envelope rejected'],
  ['badreputation', '451', 'internal resources are temporarily unavailable'],
  ['badreputation', '550', 'local ct ip reputation - (reject)'],
  ['blocked', '421', 'sender address blocked'],
  ['blocked', '451', 'recipient temporarily unavailable'],
  ['blocked', '451', 'ip temporarily blacklisted'],
  ['expired', '550', 'journal messages past the expiration'],
  ['securityerror', '553', 'this route requires encryption (tls)'],
  ['securityerror', '553', 'this route requires tls version 1.2 or greater'],
  ['securityerror', '553', 'this route requires high-strength ciphers'],
  ['securityerror', '554', 'configuration is invalid for this certificate'],
  ['mesgtoobig', '554', 'maximum email size exceeded'],
  ['networkerror', '451', 'the incorrect hostname used for inbounds'],
  ['networkerror', '550', 'the incorrect hostname used for inbounds'],
  ['networkerror', '554', 'mail loop detected'],
  ['norelaying', '451', 'open relay not allowed'],
  ['norelaying', '451', 'open relay is not allowed'],
  ['notaccept', '451', 'account inbounds disabled'],
  ['onhold', '451', 'account outbounds disabled'],
  ['onhold', '451', 'hostname is not authorized'],
  ['onhold', '550', 'journal message past expiration'],
  ['policyviolation', '550', 'anti-spoofing policy - inbound not allowed'],
  ['policyviolation', '550', 'rejected by header-based anti-spoofing policy'],
  ['policyviolation', '550', 'message bounced due to content examination policy'],
  ['policyviolation', '554', 'host network not allowed'],
  ['policyviolation', '554', 'host network, not allowed'],
  ['rejected', '550', 'administrative prohibition envelope blocked'],
  ['rejected', '550', 'envelope blocked - user entry'],
  ['rejected', '550', 'envelope blocked - user domain entry'],
  ['rejected', '550', 'rejected by header-based manually blocked senders - block for manual block'],
  ['rejected', '550', 'rejected by header-based blocked senders - block policy for header from'],
  ['rejected', '550', 'envelope rejected - block policy for envelope from address'],
  ['securityerror', '535', 'incorrect authentication data'],
  ['securityerror', '550', 'submitter failed to disabled'],
  ['securityerror', '550', 'submitter failed to authenticate'],
  ['systemerror', '451', 'unable to process connection at this time'],
  ['systemerror', '451', 'message ended early'],
  ['systemerror', '451', 'unable to process command'],
  ['systemerror', '451', 'unable to process an email at this time'],
  ['toomanyconn', '451', 'account service is temporarily unavailable'],
  ['toomanyconn', '452', 'too many recipients'],
  ['toomanyconn', '550', 'exceeding outbound thread limit'],
  ['userunknown', '501', 'invalid address'],
  ['userunknown', '503', 'user unknown'],
  ['userunknown', '550', 'invalid recipient'],
  ['virusdetected', '554', 'email rejected due to security policies'],
];

export const GATEWAY_PROVIDERS: readonly Provider[] = [
  {
    name: 'Apple',
    hosts: ['.mail.icloud.com', '.apple.com', '.me.com'],
    byHost: (i) => byPhrase(APPLE, i.text.toLowerCase()),
  },
  {
    name: 'Facebook',
    hosts: ['.facebook.com'],
    byHost: (i) => FACEBOOK[FACEBOOK_CODE.exec(i.text)?.[1] ?? ''] ?? null,
  },
  { name: 'MessageLabs', hosts: ['.messagelabs.com'], byHost: (i) => byPhrase(MESSAGELABS, i.text) },
  {
    name: 'Mimecast',
    hosts: ['.mimecast.com'],
    byHost: (i) => {
      const lower = i.text.toLowerCase();
      return MIMECAST.find(([, rc, p]) => rc === i.replycode && lower.includes(p))?.[0] ?? null;
    },
  },
];
