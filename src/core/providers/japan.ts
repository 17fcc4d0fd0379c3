// Japanese carriers and ISPs in the provider registry: KDDI/au (EZweb), NTT docomo, Biglobe — the tables read
// when the remote host is theirs and their notice formats (Sisimai Rhost/Lhost, BSD-2-Clause). Pure data.
import type { BounceReason } from '../bounce-reasons.js';
import { type NoticeFormat, type Phrases, type Provider, type ProviderInput, byPhrase } from './types.js';

type R = BounceReason;
/** KDDI: lower-case phrases. */
const KDDI: Phrases = [
  ['filtered', ['550 : user unknown']],
  ['userunknown', ['>: user unknown']],
];
/** NTT docomo: phrases, then the status code and the command. */
const DOCOMO: Phrases = [
  ['mailboxfull', ['552 too much mail data']],
  ['syntaxerror', ['503 bad sequence of commands', '504 command parameter not implemented']],
  ['toomanyconn', ['552 too many recipients']],
];

function docomoReason(i: ProviderInput, lower: string): R | null {
  if (i.status === '5.1.1' || i.status === '5.0.911') return 'userunknown';
  if (i.status === '5.2.0') return 'filtered';
  const byText = byPhrase(DOCOMO, lower);
  if (byText) return byText;
  if (i.status === '5.0.0') return i.command === 'RCPT' ? 'userunknown' : i.command === 'DATA' ? 'rejected' : null;
  return null;
}

// EZweb before KDDI in NOTICE_ORDER: an EZweb notice also comes through an "ezweb.ne.jp (" relay, KDDI's loose Received test.
const EZWEB: NoticeFormat = {
  family: 'EZweb',
  need: 2,
  detect: {
    from: /Postmaster@(?:ezweb\.ne\.jp|au\.com)/i,
    subject: /^Mail System Error - Returned Mail$/,
    received: /ezweb\.ne\.jp \(EZweb Mail\) with|\.au\.com \(/,
    messageId: /\.ezweb\.ne\.jp>|\.au\.com>/,
  },
  end: [/^-{50}$/m],
  reasons: [
    { reason: 'expired', phrases: ['Your message was not delivered within '] },
    { reason: 'mailboxfull', phrases: ['The user(s) account is temporarily over quota'] },
    { reason: 'suspend', phrases: ['The user(s) account is disabled.', 'The user(s) account is temporarily limited.'] },
    { reason: 'onhold', phrases: ['Each of the following recipients was rejected by a remote mail server'] },
  ],
  headerReason: { name: 'x-spasign', value: /^NG/, reason: 'filtered' },
};
const KDDI_NOTICE: NoticeFormat = {
  family: 'KDDI',
  detect: {
    from: /no-reply@\.|\.dion\.ne\.jp/,
    replyTo: /no-reply@app\.auone-net\.jp/,
    received: /ezweb\.ne\.jp \(|\.au\.com \(/,
  },
  reasons: [
    { reason: 'mailboxfull', phrases: ['As their mailbox is full'] },
    { reason: 'norelaying', phrases: ['Due to the following SMTP relay error'] },
    { reason: 'hostunknown', phrases: ['As the remote domain doesnt exist'] },
  ],
  headerReason: { name: 'x-spasign', value: /^NG/, reason: 'filtered' },
};
const BIGLOBE: NoticeFormat = {
  family: 'Biglobe',
  need: 2,
  detect: { from: /postmaster@(?:(?!postmaster@).)*(?:biglobe|inacatv|tmtv|ttv)\.ne\.jp/i, subject: /^Returned mail:/ },
  reasons: [
    { reason: 'filtered', phrases: ['Mail Delivery Failed... User unknown'] },
    { reason: 'mailboxfull', phrases: ["The number of messages in recipient's mailbox exceeded the local limit."] },
  ],
};

export const JAPAN_PROVIDERS: readonly Provider[] = [
  {
    name: 'KDDI',
    hosts: ['.ezweb.ne.jp', 'msmx.au.com'],
    byHost: (i) => byPhrase(KDDI, i.text.toLowerCase()),
    notices: [EZWEB, KDDI_NOTICE],
  },
  { name: 'NTTDOCOMO', hosts: ['mfsmax.docomo.ne.jp'], byHost: (i) => docomoReason(i, i.text.toLowerCase()) },
  { name: 'Biglobe', notices: [BIGLOBE] },
];
