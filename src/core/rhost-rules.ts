// Provider error codes as data (Sisimai Lhost::Exchange2007 NDR table and Rhost/* tables, BSD-2-Clause):
// a code or phrase that names its provider's meaning decides the reason. Pure data, no I/O.
import type { BounceReason } from './bounce-reasons.js';

/** Microsoft Exchange NDR diagnostic codes ("550 5.2.3 RESOLVER.RST.RecipSizeLimit; ..."), matched case-sensitively. */
export const EXCHANGE_NDR_CODES: Readonly<Record<string, BounceReason>> = {
  'SMTPSEND.DNS.NonExistentDomain': 'hostunknown', 'SMTPSEND.DNS.MxLoopback': 'networkerror',
  'RESOLVER.ADR.BadPrimary': 'systemerror', 'RESOLVER.ADR.RecipNotFound': 'userunknown',
  'RESOLVER.ADR.ExRecipNotFound': 'userunknown', 'RESOLVER.ADR.RecipLimit': 'toomanyconn',
  'RESOLVER.ADR.InvalidInSmtp': 'systemerror', 'RESOLVER.ADR.Ambiguous': 'systemerror',
  'RESOLVER.RST.AuthRequired': 'securityerror', 'RESOLVER.RST.NotAuthorized': 'rejected',
  'RESOLVER.RST.RecipSizeLimit': 'mesgtoobig', 'QUEUE.Expired': 'expired',
};

/** The reason an Exchange NDR code in the text gives, if any. */
export function ndrReason(text: string): BounceReason | null {
  const m = /\b((?:RESOLVER|QUEUE|SMTPSEND)\.[A-Za-z]+(?:\.\w+)?);/.exec(text);
  return m ? EXCHANGE_NDR_CODES[m[1] as string] ?? null : null;
}

export interface RhostRule {
  name: string;
  /** the provider's own code in the reply; capture 1 is looked up in `codes`, then in `ranges` */
  code?: RegExp;
  codes?: Readonly<Record<string, BounceReason>>;
  ranges?: readonly [number, number, BounceReason][];
  /** lower-case phrases, only when `gate` (the provider's host or help URL) occurs in the text */
  gate?: RegExp;
  phrases?: readonly { reason: BounceReason; includes: readonly string[] }[];
}

const BL: BounceReason = 'blocked';
export const RHOST_RULES: readonly RhostRule[] = [
  // Cox: "AUP#CXBL", "AUP#IPBL0001"
  { name: 'Cox', code: /AUP#([A-Z]+\d*)\b/, codes: {
    CXBL: BL, CXDNS: 'requireptr', CXSNDR: 'authfailure', CXSMTP: 'rejected', CXCNCT: 'toomanyconn',
    CXMXRT: 'toomanyconn', CDRBL: BL, CXTHRT: 'securityerror', CXMJ: 'securityerror', IPBL0001: BL, IPBL0010: BL,
    IPBL0100: BL, IPBL0011: BL, IPBL0101: BL, IPBL0110: BL, IPBL0111: BL, IPBL1000: BL, IPBL1001: BL, IPBL1010: BL,
    IPBL1011: BL, IPBL1100: BL, IPBL1101: BL, IPBL1110: BL, IPBL1111: BL, IPBL00001: BL, URLBL011: 'spamdetected',
    URLBL101: 'spamdetected', URLBL110: 'spamdetected', URLBL1001: 'spamdetected',
  }, gate: /\bcox\.(?:net|com)\b/i, phrases: [
    { reason: 'blocked', includes: ['cox too many bad commands from', 'too many invalid recipients'] },
    { reason: 'requireptr', includes: ['dns check failure - try again later', 'rejected - no rdns'] },
    { reason: 'policyviolation', includes: ['esmtp no data before greeting', 'attachment extension is forbidden'] },
    { reason: 'rejected', includes: ['sender rejected'] },
    { reason: 'systemerror', includes: ['esmtp server temporarily not available'] },
    { reason: 'toomanyconn', includes: ['too many sessions from', 'requested action aborted: try again later', 'message threshold exceeded'] },
    { reason: 'userunknown', includes: ['recipient rejected'] },
  ] },
  // Spectrum/Charter: "AUP#I1000", "AUP#O-1350", "AUP#In-1310" (Sisimai: AUP#[-A-Za-z]*(\d{4}))
  { name: 'Spectrum', code: /AUP#[-A-Za-z]*(\d{4})\b/, ranges: [
    [1000, 1000, BL], [1010, 1010, 'rejected'], [1020, 1080, 'rejected'], [1090, 1090, 'systemerror'],
    [1100, 1150, 'requireptr'], [1160, 1190, 'policyviolation'], [1200, 1210, BL], [1220, 1250, BL],
    [1260, 1260, 'networkerror'], [1300, 1340, 'toomanyconn'], [1350, 1490, 'speeding'], [1500, 1500, 'rejected'],
    [1520, 1520, 'rejected'], [1530, 1530, 'mesgtoobig'], [1540, 1540, 'speeding'], [1550, 1550, 'speeding'],
    [1560, 1560, 'policyviolation'], [1580, 1580, 'speeding'],
  ] },
  // GoDaddy (secureserver.net): "... IB401"
  { name: 'GoDaddy', code: /\s(IB\d{3})\b/, codes: {
    IB401: 'securityerror', IB501: 'notcompliantrfc', IB502: 'notcompliantrfc', IB506: 'rejected', IB508: 'authfailure',
    IB108: 'requireptr', IB212: 'spamdetected', IB705: 'virusdetected', IB605: 'toomanyconn', IB007: 'toomanyconn',
    IB101: 'speeding', IB110: BL, IB111: BL, IB112: BL, IB113: BL, IB504: 'speeding', IB510: 'speeding',
    IB607: 'speeding', IB103: 'badreputation', IB104: BL, IB105: BL, IB106: BL,
  }, gate: /secureserver\.net/i, phrases: [
    { reason: 'blocked', includes: ['rbl reject', 'www.spamhaus.org/query/bl?ip='] },
    { reason: 'expired', includes: ['has been in the queue too long', 'delivery timeout'] },
    { reason: 'mailboxfull', includes: ['account storage limit'] },
    { reason: 'spamdetected', includes: ['message rejected for spam or virus content'] },
    { reason: 'suspend', includes: ['account disabled'] },
    { reason: 'systemerror', includes: ['message is looping'] },
    { reason: 'userunknown', includes: ['recipient not found', 'account does not exist'] },
  ] },
  // Tencent (QQ mail): phrases, when the reply comes from qq.com
  { name: 'Tencent', gate: /\bqq\.com\b/i, phrases: [
    { reason: 'authfailure', includes: ['spf check failed', 'dmarc check failed'] },
    { reason: 'blocked', includes: ['suspected bounce attacks', 'suspected spam ip', 'connection denied'] },
    { reason: 'mesgtoobig', includes: ['message too large'] },
    { reason: 'rejected', includes: ['suspected spam', 'mail is rejected by recipients'] },
    { reason: 'spamdetected', includes: ['spam is embedded in the email', 'mail content denied'] },
    { reason: 'speeding', includes: ['mailbox unavailable or access denined', 'frequency of receiving messages is limited'] },
    { reason: 'suspend', includes: ['is a deactivated mailbox'] },
    { reason: 'syntaxerror', includes: ['bad address syntax'] },
    { reason: 'toomanyconn', includes: ['ip frequency limited', 'domain frequency limited', 'sender frequency limited',
      'connection frequency limited'] },
    { reason: 'userunknown', includes: ['mailbox not found'] },
  ] },
  // i.ua: "https://mail.i.ua/err/2/"
  { name: 'IUA', code: /\.i\.ua\/err\/(\d+)\//i, codes: {
    1: 'norelaying', 2: 'userunknown', 3: 'suspend', 4: 'mailboxfull', 5: 'toomanyconn', 6: 'norelaying', 7: BL,
    8: 'rejected', 9: BL, 10: 'filtered',
  } },
  // Yahoo Inc. (yahoo.com, aol.com, ...): phrases, when the reply names a Yahoo/AOL host or help page
  { name: 'YahooInc', gate: /yahoo(?:inc)?\.|\baol\.|yahoodns\.net/i, phrases: [
    { reason: 'authfailure', includes: ['yahoo requires all senders to authenticate with either spf or dkim'] },
    { reason: 'blocked', includes: [" because the ip is in spamhaus's list;", 'not accepted from ip addresses on spamhaus xbl'] },
    { reason: 'norelaying', includes: ['relaying denied for '] },
    { reason: 'notcompliantrfc', includes: ['headers are not rfc compliant'] },
    { reason: 'policyviolation', includes: ['not accepted for policy reasons'] },
    { reason: 'rejected', includes: ['temporarily deferred due to unexpected volume or user complaints',
      'due to unresolvable rfc.5321 domain', ' will be permanently deferred'] },
    { reason: 'speeding', includes: ['user is receiving mail too quickly'] },
    { reason: 'suspend', includes: [' is no longer valid.', 'this mailbox is disabled'] },
    { reason: 'syntaxerror', includes: ['syntax error in parameters or arguments'] },
    { reason: 'toomanyconn', includes: ['max message per connection reached'] },
    { reason: 'userunknown', includes: ["dd this user doesn't have a ", 'mailbox not found'] },
  ] },
  // Microsoft (Exchange Online, Outlook.com): phrases of its NDR reference, when the reply names a Microsoft host
  { name: 'Microsoft', gate: /outlook\.com|hotmail\.|\blive\.com|\bmsn\.com|microsoft\.com/i, phrases: [
    { reason: 'authfailure', includes: ['must pass either spf or dkim validation, this message is not signed',
      'the message was rejected because of sender policy framework violation', 'does not pass dmarc verification',
      "doesn't meet the required authentication level"] },
    { reason: 'badreputation', includes: ['has been temporarily rate limited due to ip reputation'] },
    { reason: 'blocked', includes: ['access denied, please try again later', 'must have a reverse dns record',
      'access denied, bad helo', 'access denied, rejected by recipient', 'does not accept email over ipv6',
      'access denied, banned sender', 'using customer block list', 'access denied, banned sending ip ',
      'part of their network is on our block list (s3150)'] },
    { reason: 'mesgtoobig', includes: ['resolver.rst.recipsizelimit; message too large for this recipient',
      'message size exceeds fixed maximum message size', 'message too big for system'] },
    { reason: 'expired', includes: ['queue expired; message expired', 'message expired'] },
  ] },
];

/**
 * The reason a provider's own code or (host-gated) phrase table gives for this reply text, if any. The gate
 * is tried on the text and on the remote host (Remote-MTA), as Sisimai picks its Rhost table by that host.
 */
export function rhostReason(text: string, host?: string | null): BounceReason | null {
  const lower = text.toLowerCase();
  for (const r of RHOST_RULES) {
    const code = r.code?.exec(text)?.[1];
    if (code) {
      const byCode = r.codes?.[code];
      if (byCode) return byCode;
      const n = Number(code);
      const range = r.ranges?.find(([lo, hi]) => n >= lo && n <= hi);
      if (range) return range[2];
    }
    if (r.gate?.test(text) || (host && r.gate?.test(host))) {
      const hit = r.phrases?.find((p) => p.includes.some((s) => lower.includes(s)));
      if (hit) return hit.reason;
    }
  }
  return null;
}
