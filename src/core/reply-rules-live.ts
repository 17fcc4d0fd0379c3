// Phrases read in LIVE SMTP replies only (the delivery loop's reading of a remote server's answer, outbound/outcome.ts),
// merged into the phrase rule of their reason there. A bounce notice is read with Sisimai 5.1.0's own lists
// (reply-rules.ts), which lack these: Sisimai's reading of a notice is the reference for notices (issue 37), while a
// live reply is ours to read as well as we can. Lower case, like every phrase rule. docs/inbound.md, "Session 22".
import type { BounceReason } from './bounce-reasons.js';

export interface LivePhrases {
  includes?: readonly string[];
  aligned?: readonly (readonly string[])[];
}

export const LIVE_PHRASES: Readonly<Partial<Record<BounceReason, LivePhrases>>> = {
  mailboxfull: {
    includes: [
      'mailbox exceeds allowed size',
      'mailbox would exceed maximum allowed storage',
      "user's space has been used up",
      'not enough disk space',
    ],
  },
  mesgtoobig: { includes: ['exceeded the maximum incoming message size', 'message exceeds maximum size'] },
  norelaying: { includes: ['unable to relay '] },
  authfailure: {
    includes: [
      // Microsoft 5.7.515, 5.7.509 (test/fixtures/synthetic/provider-texts.json has each source)
      "doesn't meet the required authentication level",
      'does not meet the required authentication level',
      "the 5322.from address doesn't meet the authentication requirements defined for the sender",
      'dmarc rejection',
      'failed dmarc',
      'dkim signature',
      // Google 5.7.26, 4.7.27, 4.7.30, 4.7.32, 4.7.40; Yahoo "sender is unauthenticated"
      "spf authentication didn't pass",
      "dkim authentication didn't pass",
      "isn't aligned with either the authenticated spf or dkim",
      'the sender is unauthenticated',
      'senders to authenticate with spf',
      'does not pass dmarc verification',
    ],
  },
  userunknown: {
    includes: [
      'resolver.adr.recipientnotfound',
      'weil die adresse nicht gefunden wurde oder keine e-mails empfangen kann',
      'recipient name is not recognized',
      "email address wasn't found at the destination domain",
    ],
    aligned: [
      // Sisimai's own pairs have two spaces here ("user  does not exist"), as some servers write it
      ['recipient address rejected: user ', ' does not exist'],
      ['recipient address rejected: user unknown in ', ' table'],
      ['said: 550', '5.1.1 ', ' user unknown '],
    ],
  },
  filtered: {
    includes: [
      'account is protected by',
      'recipient id refuse to receive mail',
      'recipient is only accepting mail from specific email addresses',
    ],
  },
  requireptr: {
    includes: [
      'cannot resolve your address.',
      // Gmail 4.7.23
      "doesn't have a ptr record, or the ptr record's forward dns entry",
    ],
  },
  notcompliantrfc: { aligned: [[' multiple ', ' header']] },
  badreputation: {
    includes: [
      // Gmail 4.7.28 (2025 wording), Yahoo TS01/TS02
      'unusual rate of unsolicited email',
      'unusual rate of email',
      'unusual amount of unsolicited email',
      'temporarily deferred due to user complaints',
    ],
  },
  rejected: {
    includes: [
      // Microsoft 5.7.750
      'client blocked from sending from unregistered domains',
      'sender address rejected',
      'domain of sender address does not exist',
    ],
  },
  hostunknown: { includes: ['domain not found'] },
  spamdetected: { aligned: [['mail score (', ' over ']] },
  // Sisimai 5.1.0 lists it with "IP" in capitals and matches lower-cased text, so it never matches a notice
  speeding: { includes: ['mail sent from your ip address has been temporarily rate limited'] },
  // Sisimai 5.1.0 has no failedstarttls: both are securityerror phrases there (reply-rules.ts)
  failedstarttls: { includes: ['starttls is required to send mail', 'tls required but not supported'] },
  blocked: {
    includes: [
      // Microsoft 5.7.708, 5.7.510
      'traffic not accepted from this ip',
      'does not accept email over ipv6',
      'mailfrom domain is listed in spamhaus',
      'access denied, banned sending ip',
      'blocked by spamhaus',
      'listed on spamhaus',
    ],
    aligned: [
      ['mail from ', ' refused, see ', 'orbs'],
      ['your access ip', ' has been rejected'],
    ],
  },
  securityerror: { includes: ['anti-spoofing policy'] },
  notaccept: { includes: ['null mx', "doesn't receive email according to the administrator"] },
  expired: { includes: ['retry timeout exceeded'] },
};
