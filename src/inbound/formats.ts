// Notice formats as data (ported from Sisimai Lhost modules, BSD-2-Clause): how each MTA/provider's bounce
// is recognised, where its error block and returned message begin, its recipient lines and phrase → reason tables.
import type { BounceReason } from '../core/bounce-reasons.js';
import { type Entity, decodeWords, header } from './mime.js';

export interface NoticeFormat {
  family: string;
  /** each test that passes counts one; the format applies when `need` (default 1) of them pass */
  detect: {
    from?: RegExp; subject?: RegExp; messageId?: RegExp; received?: RegExp; body?: RegExp;
    headers?: readonly string[]; replyTo?: RegExp; contentType?: RegExp; xMailer?: RegExp;
  };
  need?: number;
  /** lines that start the returned original message (the error block ends there) */
  end?: readonly RegExp[];
  /** phrases in the error text → reason (case-sensitive, as Sisimai matches them) */
  reasons?: readonly { reason: BounceReason; phrases: readonly string[] }[];
  /** enhanced status code → reason, applied before the generic reading (Office 365) */
  statuses?: readonly [RegExp, BounceReason][];
  /** a header value that decides the reason (au/EZweb X-SPASIGN: NG → filtered) */
  headerReason?: { name: string; value: RegExp; reason: BounceReason };
  /** SMTP command → provisional reason (Exim: HELO blocked, MAIL onhold); with a bare reply code it fixes the pseudo status */
  commands?: Readonly<Record<string, BounceReason>>;
  /** reasons whose pseudo status is temporary when the notice has neither a status nor a reply code (Exim) */
  temporaryWithoutCode?: readonly BounceReason[];
}

const A = "[\\w.!#$%&'*+/=?^`{|}~-]+@[\\w-]+(?:\\.[\\w-]+)+";

/** Recipient lines of provider formats (capture 1 = the address); specific enough to try on any notice. */
export const FORMAT_RECIPIENT_LINES: readonly RegExp[] = [
  new RegExp(`Could not be delivered to: <(${A})>`, 'i'), // au/KDDI
  new RegExp(`^(${A}) \\[[^\\]]+\\]\\s*$`), // X1: "address [User unknown]"
  new RegExp(`^\\s+\\* (${A})\\s*$`), // X3: "  * address"
  new RegExp(`rejected recipient <(${A})>`, 'i'), // X6
  new RegExp(`^The following recipients returned permanent errors: (${A})`, 'i'), // X6
  new RegExp(`^Unable to deliver message to: <(${A})>`, 'i'), // MailFoundry
  new RegExp(`^\\s*Original address: (${A})\\s*$`, 'i'), // Messaging Server
  new RegExp(`^\\s*Recipient: <(${A})>`, 'i'), // EZweb (Sendmail-like rejection list)
  new RegExp(`^\\s+[^\\s@]+@\\S+\\.[a-zA-Z]+ <(${A})>:`), // Exim: "  a@b <c@d>: malformed address: ..."
];

/** Exim's error texts (deliver.c, routers, transports) → reason; MXLogic and Mail.ru reuse Exim. */
const EXIM_REASONS: NoticeFormat['reasons'] = [
  { reason: 'userunknown', phrases: ['user not found'] },
  { reason: 'hostunknown', phrases: ['all host address lookups failed permanently',
    'all relevant MX records point to non-existent hosts', 'Unrouteable address'] },
  { reason: 'mailboxfull', phrases: ['mailbox is full', 'error: quota exceed'] },
  { reason: 'notaccept', phrases: ['an MX or SRV record indicated no SMTP service', 'no host found for existing SMTP connection'] },
  { reason: 'syntaxerror', phrases: ['angle-brackets nested too deep', 'expected word or "<"',
    'domain missing in source-routed address', 'malformed address:'] },
  { reason: 'systemerror', phrases: ['delivery to file forbidden', 'delivery to pipe forbidden', 'local delivery failed', 'LMTP error after '] },
  { reason: 'contenterror', phrases: ['Too many "Received" headers'] },
  { reason: 'expired', phrases: ['retry timeout exceeded', 'No action is required on your part',
    'retry time not reached for any host after a long failure period',
    'all hosts have been failing for a long time and were last tried', 'Delay reason: ', 'has been frozen',
    'was frozen on arrival by '] },
];

export const FORMATS: readonly NoticeFormat[] = [
  { family: 'Office365', need: 2, detect: {
    subject: /Undeliverable:|Onbestelbaar:|Não_entregue:|N=C3=A3o_entregue:/,
    headers: ['x-ms-exchange-message-is-ndr', 'x-microsoft-antispam-prvs', 'x-exchange-antispam-report-test',
      'x-exchange-antispam-report-cfa-test', 'x-ms-exchange-crosstenant-originalarrivaltime',
      'x-ms-exchange-crosstenant-fromentityheader', 'x-ms-exchange-transport-crosstenantheadersstamped'],
    received: /\.(?:outbound\.protection|prod)\.outlook\.com\b/, messageId: /\.(?:outbound\.protection|prod)\.outlook\.com\b/,
  }, end: [/^Original [Mm]essage [Hh]eaders:?/m, /^Message Hops/m, /^Oorspronkelijke berichtkoppen:/m],
  statuses: [
    [/^4\.4\.7$/, 'expired'], [/^4\.4\.312$/, 'networkerror'], [/^4\.4\.316$/, 'expired'], [/^4\.7\.26$/, 'authfailure'],
    [/^4\.7\.[56]\d\d$/, 'blocked'], [/^4\.7\.8[5-9]\d$/, 'blocked'], [/^5\.0\.350$/, 'contenterror'],
    [/^5\.1\.10$/, 'userunknown'], [/^5\.4\.1$/, 'norelaying'], [/^5\.4\.6$/, 'networkerror'],
    [/^5\.4\.312$/, 'networkerror'], [/^5\.4\.316$/, 'expired'], [/^5\.6\.11$/, 'contenterror'],
    [/^5\.7\.1$/, 'rejected'], [/^5\.7\.1[23]$/, 'rejected'], [/^5\.7\.124$/, 'rejected'], [/^5\.7\.13[3-6]$/, 'rejected'],
    [/^5\.7\.23$/, 'blocked'], [/^5\.7\.25$/, 'networkerror'], [/^5\.7\.50[1-3]$/, 'spamdetected'],
    [/^5\.7\.50[45]$/, 'filtered'], [/^5\.7\.50[67]$/, 'blocked'], [/^5\.7\.508$/, 'toomanyconn'],
    [/^5\.7\.509$/, 'authfailure'], [/^5\.7\.510$/, 'notaccept'], [/^5\.7\.511$/, 'rejected'],
    [/^5\.7\.512$/, 'policyviolation'], [/^5\.7\.57$/, 'securityerror'], [/^5\.7\.60[6-9]$/, 'blocked'],
    [/^5\.7\.6[1-4]\d$/, 'blocked'], [/^5\.7\.7[0-4]\d$/, 'toomanyconn'],
  ] },
  { family: 'Yahoo', detect: { headers: ['x-ymailisg'] }, end: [/^--- Below this line is a copy of the message\./m] },
  { family: 'Aol', detect: { headers: ['x-aol-ip'] }, reasons: [
    { reason: 'hostunknown', phrases: ['Host or domain name not found'] },
    { reason: 'notaccept', phrases: ['type=MX: Malformed or unexpected name server reply'] },
  ] },
  { family: 'MailRu', need: 3, detect: {
    from: /mailer-daemon@(?:(?!mailer-daemon@).)*mail\.ru/i, messageId: /\.mail\.ru>|smailru\.net>/,
    subject: /Delivery Status Notification|Mail delivery failed|Mail failure|Message frozen|Warning: message |error\(s\) in forwarding or filtering/,
  }, end: [/^------ This is a copy of the message, including all the headers\. ------/m], reasons: [
    { reason: 'expired', phrases: ['retry timeout exceeded', 'No action is required on your part'] },
    { reason: 'userunknown', phrases: ['user not found'] },
    { reason: 'hostunknown', phrases: ['all host address lookups failed permanently',
      'all relevant MX records point to non-existent hosts', 'Unrouteable address'] },
    { reason: 'mailboxfull', phrases: ['mailbox is full', 'error: quota exceed'] },
    { reason: 'notaccept', phrases: ['an MX or SRV record indicated no SMTP service', 'no host found for existing SMTP connection'] },
    { reason: 'systemerror', phrases: ['delivery to file forbidden', 'delivery to pipe forbidden', 'local delivery failed'] },
    { reason: 'contenterror', phrases: ['Too many "Received" headers '] },
  ] },
  { family: 'MXLogic', detect: { headers: ['x-mx-bounce', 'x-mxl-hash', 'x-mxl-notehash'] },
    end: [/^Included is a copy of the message header:/m], reasons: EXIM_REASONS },
  { family: 'Exim', need: 2, detect: {
    from: /^Mail Delivery System/, messageId: /^<[0-9A-Za-z]{7}-[0-9A-Za-z]{6}-[0-9A-Za-z]{2}@/,
    subject: /^(?:Mail delivery failed|Mail failure|Message frozen|Warning: message .+ delayed|error\(s\) in forwarding or filtering)/,
    received: /with local \(Exim \d/,
  }, end: [/^-+ This is a copy of (?:the|your) message/m], reasons: EXIM_REASONS,
  commands: { HELO: 'blocked', EHLO: 'blocked', MAIL: 'onhold' }, temporaryWithoutCode: ['expired', 'mailboxfull'] },
  { family: 'Gmail', need: 2, detect: { from: /<?mailer-daemon@googlemail\.com>?/i, subject: /Delivery Status Notification/ },
    reasons: [
      { reason: 'expired', phrases: ['DNS Error: Could not contact DNS servers',
        'Delivery to the following recipient has been delayed', 'The recipient server did not accept our requests to connect'] },
      { reason: 'hostunknown', phrases: ['DNS Error: Domain name not found', 'DNS Error: DNS server returned answer with no data'] },
    ] },
  // Outlook.com/Hotmail DSNs (Sisimai Lhost::Outlook)
  { family: 'Outlook', need: 2, detect: { from: /postmaster@(?:mail\.)?hotmail\.com/i, subject: /Delivery Status Notification/ },
    reasons: [
      { reason: 'hostunknown', phrases: ['The mail could not be delivered to the recipient because the domain is not reachable'] },
      { reason: 'userunknown', phrases: ['Requested action not taken: mailbox unavailable'] },
    ] },
  { family: 'Courier', detect: { from: /Courier mail server at /, subject: /NOTICE: mail delivery status\.|WARNING: delayed mail\./,
    messageId: /^<courier\.[0-9A-F]+\./ }, reasons: [
    { reason: 'hostunknown', phrases: ['No such domain.'] },
    { reason: 'systemerror', phrases: ["This domain's DNS violates RFC 1035."] },
    { reason: 'networkerror', phrases: ['DNS lookup failed.'] },
  ] },
  { family: 'Exchange2007', detect: { subject: /^Undeliverable:/ }, end: [/^Original message headers:/m] },
  // EZweb before KDDI: an EZweb notice also comes through an "ezweb.ne.jp (" relay, KDDI's loose Received test.
  { family: 'EZweb', need: 2, detect: { from: /Postmaster@(?:ezweb\.ne\.jp|au\.com)/i,
    subject: /^Mail System Error - Returned Mail$/, received: /ezweb\.ne\.jp \(EZweb Mail\) with|\.au\.com \(/,
    messageId: /\.ezweb\.ne\.jp>|\.au\.com>/ }, end: [/^-{50}$/m], reasons: [
    { reason: 'expired', phrases: ['Your message was not delivered within '] },
    { reason: 'mailboxfull', phrases: ['The user(s) account is temporarily over quota'] },
    { reason: 'suspend', phrases: ['The user(s) account is disabled.', 'The user(s) account is temporarily limited.'] },
    { reason: 'onhold', phrases: ['Each of the following recipients was rejected by a remote mail server'] },
  ], headerReason: { name: 'x-spasign', value: /^NG/, reason: 'filtered' } },
  { family: 'KDDI', detect: { from: /no-reply@\.|\.dion\.ne\.jp/, replyTo: /no-reply@app\.auone-net\.jp/,
    received: /ezweb\.ne\.jp \(|\.au\.com \(/ }, reasons: [
    { reason: 'mailboxfull', phrases: ['As their mailbox is full'] },
    { reason: 'norelaying', phrases: ['Due to the following SMTP relay error'] },
    { reason: 'hostunknown', phrases: ['As the remote domain doesnt exist'] },
  ], headerReason: { name: 'x-spasign', value: /^NG/, reason: 'filtered' } },
  { family: 'Biglobe', need: 2, detect: { from: /postmaster@(?:(?!postmaster@).)*(?:biglobe|inacatv|tmtv|ttv)\.ne\.jp/i, subject: /^Returned mail:/ },
    reasons: [
      { reason: 'filtered', phrases: ['Mail Delivery Failed... User unknown'] },
      { reason: 'mailboxfull', phrases: ["The number of messages in recipient's mailbox exceeded the local limit."] },
    ] },
  { family: 'mFILTER', need: 2, detect: { subject: /^failure notice$/, xMailer: /^m-FILTER$/ },
    end: [/^-------original message/m, /^-------original mail info/m] },
  { family: 'MailMarshalSMTP', detect: { subject: /^Undeliverable Mail: "/ },
    end: [/^Additional Information$/m, /^'?\+{60,}/m] },
  { family: 'MailFoundry', need: 2, detect: { subject: /^Message delivery has failed$/, received: /\(MAILFOUNDRY\) id/ } },
  { family: 'Notes', detect: { subject: /^Undeliverable message/ }, end: [/^------- Returned Message --------/m], reasons: [
    { reason: 'networkerror', phrases: ['Message has exceeded maximum hop count'] },
    { reason: 'userunknown', phrases: ['User not listed in public Name & Address Book', 'ディレクトリのリストにありません'] },
  ] },
  { family: 'Verizon', detect: { from: /post_master@vtext\.com|sysadmin@(?:(?!sysadmin@).)*\.vzwpix\.com/ },
    end: [/^Original Message:/m], reasons: [
      { reason: 'userunknown', phrases: ['550 - Requested action not taken: no such user here', 'No valid recipients'] },
    ] },
  { family: 'X1', detect: { subject: /^Returned Mail: |^Mail Delivery Failure/, from: /"Mail Deliver(?:y|ed) System" / } },
  { family: 'X2', detect: { subject: /^(?:Delivery failure|failure delivery|failed delivery)/ },
    end: [/^--- Original message follows\./m] },
  { family: 'X3', need: 2, detect: { from: /^Mail Delivery System/, subject: /^Delivery status notification/ } },
  { family: 'X4', detect: { subject: /^failure notice|^Permanent Delivery Failure/, received: /\(qmail \d+ invoked (?:for bounce|from network)\)/ },
    reasons: [
      { reason: 'suspend', phrases: ['Mailaddress is administratively disabled', 'Mailaddress is administrativley disabled'] },
      { reason: 'exceedlimit', phrases: ['The message exeeded the maximum size the user accepts'] },
      { reason: 'mailboxfull', phrases: ['disk quota exceeded'] },
      { reason: 'mesgtoobig', phrases: ['Message size exceeds fixed maximum message size:'] },
      { reason: 'hostunknown', phrases: ["Sorry, I couldn't find any host "] },
      { reason: 'systemfull', phrases: ['Requested action not taken: mailbox unavailable (not enough free space)'] },
      { reason: 'networkerror', phrases: ["Sorry, I wasn't able to establish an SMTP connection",
        "Sorry, I couldn't find a mail exchanger or IP address", "Sorry. Although I'm listed as a best-preference MX or A for that host"] },
    ] },
  { family: 'X6', detect: { subject: /^There was an error sending your mail/ },
    end: [/^The attachment contains the original mail headers/m] },
  { family: 'OpenSMTPD', need: 2, detect: { subject: /Delivery status notification/, received: / \(OpenSMTPD\) with / },
    end: [/^[ \t]*Below is a copy of the original message:/m] },
  { family: 'MessagingServer', detect: { contentType: /Boundary_\(ID_/, subject: /^Delivery Notification: / } },
  { family: 'V5sendmail', detect: { subject: /^Returned mail: / },
    end: [/^[ \t]*-+ Unsent message follows -+/m, /^[ \t]*-+ No message was collected -+/m] },
];

function passes(f: NoticeFormat, h: Map<string, string[]>, body: string): number {
  const d = f.detect;
  const one = (name: string): string => decodeWords(header(h, name) ?? '');
  let n = 0;
  if (d.from?.test(one('from'))) n++;
  if (d.subject?.test(one('subject'))) n++;
  if (d.messageId?.test(one('message-id'))) n++;
  if (d.replyTo?.test(one('reply-to'))) n++;
  if (d.contentType?.test(one('content-type'))) n++;
  if (d.xMailer?.test(one('x-mailer'))) n++;
  if (d.received && (h.get('received') ?? []).some((r) => d.received?.test(r))) n++;
  if (d.body?.test(body)) n++;
  for (const name of d.headers ?? []) if (h.has(name)) n++;
  return n;
}

/** The first format whose detection tests pass for this message, or null. */
export function detectFormat(root: Entity, body: string): NoticeFormat | null {
  return FORMATS.find((f) => passes(f, root.headers, body) >= (f.need ?? 1)) ?? null;
}

/** The reason the format's phrase tables (or header rule) give for this error text, if any. */
export function formatReason(f: NoticeFormat | null, root: Entity, text: string, status: string | null): BounceReason | null {
  if (!f) return null;
  const hr = f.headerReason;
  if (hr && hr.value.test(header(root.headers, hr.name) ?? '')) return hr.reason;
  if (status) for (const [re, reason] of f.statuses ?? []) if (re.test(status)) return reason;
  for (const r of f.reasons ?? []) if (r.phrases.some((p) => text.includes(p))) return r.reason;
  return null;
}
