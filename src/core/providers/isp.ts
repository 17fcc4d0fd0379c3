// ISPs and mailbox providers in the provider registry whose replies carry their own codes or phrases: Cox,
// Spectrum, GoDaddy, Tencent, i.ua, Orange/La Poste, Yahoo Inc., Aol (Sisimai Rhost/Lhost tables, BSD-2-Clause). Pure data.
import type { BounceReason } from '../bounce-reasons.js';
import { type CodeRule, type NoticeFormat, type Phrases, type Provider, asReasons, byPhrase } from './types.js';

const BL: BounceReason = 'blocked';
const RULES: readonly CodeRule[] = [
  // Cox: "AUP#CXBL", "AUP#IPBL0001"
  {
    name: 'Cox',
    code: /AUP#([A-Z]+\d*)\b/,
    codes: {
      CXBL: BL,
      CXDNS: 'requireptr',
      CXSNDR: 'authfailure',
      CXSMTP: 'rejected',
      CXCNCT: 'toomanyconn',
      CXMXRT: 'toomanyconn',
      CDRBL: BL,
      CXTHRT: 'securityerror',
      CXMJ: 'securityerror',
      IPBL0001: BL,
      IPBL0010: BL,
      IPBL0100: BL,
      IPBL0011: BL,
      IPBL0101: BL,
      IPBL0110: BL,
      IPBL0111: BL,
      IPBL1000: BL,
      IPBL1001: BL,
      IPBL1010: BL,
      IPBL1011: BL,
      IPBL1100: BL,
      IPBL1101: BL,
      IPBL1110: BL,
      IPBL1111: BL,
      IPBL00001: BL,
      URLBL011: 'spamdetected',
      URLBL101: 'spamdetected',
      URLBL110: 'spamdetected',
      URLBL1001: 'spamdetected',
    },
    gate: /\bcox\.(?:net|com)\b/i,
    phrases: [
      { reason: 'blocked', includes: ['cox too many bad commands from', 'too many invalid recipients'] },
      { reason: 'requireptr', includes: ['dns check failure - try again later', 'rejected - no rdns'] },
      { reason: 'policyviolation', includes: ['esmtp no data before greeting', 'attachment extension is forbidden'] },
      { reason: 'rejected', includes: ['sender rejected'] },
      { reason: 'systemerror', includes: ['esmtp server temporarily not available'] },
      {
        reason: 'toomanyconn',
        includes: ['too many sessions from', 'requested action aborted: try again later', 'message threshold exceeded'],
      },
      { reason: 'userunknown', includes: ['recipient rejected'] },
    ],
  },
  // Spectrum/Charter: "AUP#I1000", "AUP#O-1350", "AUP#In-1310" (Sisimai: AUP#[-A-Za-z]*(\d{4}))
  {
    name: 'Spectrum',
    code: /AUP#[-A-Za-z]*(\d{4})\b/,
    ranges: [
      [1000, 1000, BL],
      [1010, 1010, 'rejected'],
      [1020, 1080, 'rejected'],
      [1090, 1090, 'systemerror'],
      [1100, 1150, 'requireptr'],
      [1160, 1190, 'policyviolation'],
      [1200, 1210, BL],
      [1220, 1250, BL],
      [1260, 1260, 'networkerror'],
      [1300, 1340, 'toomanyconn'],
      [1350, 1490, 'speeding'],
      [1500, 1500, 'rejected'],
      [1520, 1520, 'rejected'],
      [1530, 1530, 'mesgtoobig'],
      [1540, 1540, 'speeding'],
      [1550, 1550, 'speeding'],
      [1560, 1560, 'policyviolation'],
      [1580, 1580, 'speeding'],
    ],
  },
  // GoDaddy (secureserver.net): "... IB401"
  {
    name: 'GoDaddy',
    code: /\s(IB\d{3})\b/,
    codes: {
      IB401: 'securityerror',
      IB501: 'notcompliantrfc',
      IB502: 'notcompliantrfc',
      IB506: 'rejected',
      IB508: 'authfailure',
      IB108: 'requireptr',
      IB212: 'spamdetected',
      IB705: 'virusdetected',
      IB605: 'toomanyconn',
      IB007: 'toomanyconn',
      IB101: 'speeding',
      IB110: BL,
      IB111: BL,
      IB112: BL,
      IB113: BL,
      IB504: 'speeding',
      IB510: 'speeding',
      IB607: 'speeding',
      IB103: 'badreputation',
      IB104: BL,
      IB105: BL,
      IB106: BL,
    },
    gate: /secureserver\.net/i,
    phrases: [
      { reason: 'blocked', includes: ['rbl reject', 'www.spamhaus.org/query/bl?ip='] },
      { reason: 'expired', includes: ['has been in the queue too long', 'delivery timeout'] },
      { reason: 'mailboxfull', includes: ['account storage limit'] },
      { reason: 'spamdetected', includes: ['message rejected for spam or virus content'] },
      { reason: 'suspend', includes: ['account disabled'] },
      { reason: 'systemerror', includes: ['message is looping'] },
      { reason: 'userunknown', includes: ['recipient not found', 'account does not exist'] },
    ],
  },
  // Tencent (QQ mail): phrases, when the reply comes from qq.com
  {
    name: 'Tencent',
    gate: /\bqq\.com\b/i,
    phrases: [
      { reason: 'authfailure', includes: ['spf check failed', 'dmarc check failed'] },
      { reason: 'blocked', includes: ['suspected bounce attacks', 'suspected spam ip', 'connection denied'] },
      { reason: 'mesgtoobig', includes: ['message too large'] },
      { reason: 'rejected', includes: ['suspected spam', 'mail is rejected by recipients'] },
      { reason: 'spamdetected', includes: ['spam is embedded in the email', 'mail content denied'] },
      {
        reason: 'speeding',
        includes: ['mailbox unavailable or access denined', 'frequency of receiving messages is limited'],
      },
      { reason: 'suspend', includes: ['is a deactivated mailbox'] },
      { reason: 'syntaxerror', includes: ['bad address syntax'] },
      {
        reason: 'toomanyconn',
        includes: [
          'ip frequency limited',
          'domain frequency limited',
          'sender frequency limited',
          'connection frequency limited',
        ],
      },
      { reason: 'userunknown', includes: ['mailbox not found'] },
    ],
  },
  // i.ua: "https://mail.i.ua/err/2/"
  {
    name: 'IUA',
    code: /\.i\.ua\/err\/(\d+)\//i,
    codes: {
      1: 'norelaying',
      2: 'userunknown',
      3: 'suspend',
      4: 'mailboxfull',
      5: 'toomanyconn',
      6: 'norelaying',
      7: BL,
      8: 'rejected',
      9: BL,
      10: 'filtered',
    },
  },
  // Yahoo Inc. (yahoo.com, aol.com, ...): phrases, when the reply names a Yahoo/AOL host or help page
  {
    name: 'YahooInc',
    gate: /yahoodns\.net/i,
    phrases: [
      { reason: 'authfailure', includes: ['yahoo requires all senders to authenticate with either spf or dkim'] },
      {
        reason: 'blocked',
        includes: [" because the ip is in spamhaus's list;", 'not accepted from ip addresses on spamhaus xbl'],
      },
      { reason: 'norelaying', includes: ['relaying denied for '] },
      { reason: 'notcompliantrfc', includes: ['headers are not rfc compliant'] },
      { reason: 'policyviolation', includes: ['not accepted for policy reasons'] },
      {
        reason: 'rejected',
        includes: [
          'temporarily deferred due to unexpected volume or user complaints',
          'due to unresolvable rfc.5321 domain',
          ' will be permanently deferred',
        ],
      },
      { reason: 'speeding', includes: ['user is receiving mail too quickly'] },
      { reason: 'suspend', includes: [' is no longer valid.', 'this mailbox is disabled'] },
      { reason: 'syntaxerror', includes: ['syntax error in parameters or arguments'] },
      { reason: 'toomanyconn', includes: ['max message per connection reached'] },
      { reason: 'userunknown', includes: ["dd this user doesn't have a ", 'mailbox not found'] },
    ],
  },
  // Orange / La Poste: "LPN105_104", "OFR006_102", "OFR_506", "OUK_513"
  {
    name: 'FrancePTT',
    code: /\b(?:LPN|OFR|OUK)(?:_|\d{3}[-_])(\d{3})\b/i,
    codes: {
      102: BL,
      103: BL,
      104: 'toomanyconn',
      305: 'securityerror',
      401: BL,
      402: 'securityerror',
      403: 'rejected',
      405: 'rejected',
      415: 'rejected',
      416: 'userunknown',
      417: 'mailboxfull',
      418: 'userunknown',
      420: 'suspend',
      421: 'rejected',
      426: 'suspend',
      505: 'systemerror',
      506: 'spamdetected',
      510: BL,
      514: 'mesgtoobig',
      630: 'policyviolation',
      999: BL,
    },
  },
];

const YAHOO: NoticeFormat = {
  family: 'Yahoo',
  detect: { headers: ['x-ymailisg'] },
  end: [/^--- Below this line is a copy of the message\./m],
  // Yahoo's notices are qmail's; go-sisimai reads them with qmail's table, where "Unable to" is a system error
  reasons: [{ reason: 'systemerror', phrases: ['Unable to deliver message after multiple retries'] }],
};
/** Aol: phrases matched case-sensitively, as Sisimai does; its notices use the same table. */
const AOL: Phrases = [
  ['hostunknown', ['Host or domain name not found']],
  ['notaccept', ['type=MX: Malformed or unexpected name server reply']],
];
const AOL_NOTICE: NoticeFormat = { family: 'Aol', detect: { headers: ['x-aol-ip'] }, reasons: asReasons(AOL) };

export const ISP_PROVIDERS: readonly Provider[] = [
  ...RULES.map((r): Provider =>
    r.name === 'YahooInc' ? { name: r.name, codeRules: [r], notices: [YAHOO] } : { name: r.name, codeRules: [r] },
  ),
  { name: 'Aol', hosts: ['.mail.aol.com', '.mx.aol.com'], byHost: (i) => byPhrase(AOL, i.text), notices: [AOL_NOTICE] },
];
