// Signs of Sisimai decoders (Lhost modules) the reader has no notice format of, from each module's `inquire`. Pure data.
// Ported from Sisimai (BSD-2-Clause): Lhost::Exchange2003, ApacheJames, Activehunter, McAfee, SurfControl, MessageLabs,
// Facebook, Bigfoot, Barracuda.

/**
 * Sisimai decoders the reader has no notice format of, which take a notice before Sisimai's RFC 3464 decoder does: the
 * header tests of each one's `inquire` (every test of an entry must hold; a multi-valued header such as Received
 * passes when one of its values does). A text notice they take is not read with Sisimai's RFC 3464 fallback
 * (src/inbound/rfc3464-fallback.ts) but as the reader read it before.
 */
export const UNFORMATTED_DECODER_SIGNS: readonly { family: string; all: readonly (readonly [string, RegExp])[] }[] = [
  { family: 'Exchange2003', all: [['x-ms-embedded-report', /^/]] },
  {
    family: 'Exchange2003',
    all: [['x-mailer', /^(?:Internet Mail Service \(|Microsoft Exchange Server Internet Mail Connector)/]],
  },
  { family: 'Exchange2003', all: [['x-mimeole', /^Produced By Microsoft Exchange/]] },
  { family: 'Exchange2003', all: [['received', / with Internet Mail Service \(/]] },
  { family: 'ApacheJames', all: [['subject', /^\[BOUNCE\]$/]] },
  { family: 'ApacheJames', all: [['message-id', /\.JavaMail\./]] },
  { family: 'ApacheJames', all: [['received', /JAMES SMTP Server/]] },
  { family: 'Activehunter', all: [['x-ahmailid', /^/]] },
  {
    family: 'McAfee',
    all: [
      ['x-nai-header', /Modified by McAfee/],
      ['subject', /^Delivery Status$/],
    ],
  },
  {
    family: 'SurfControl',
    all: [
      ['x-sef-processed', /\S/],
      ['x-mailer', /^SurfControl E-mail Filter$/],
    ],
  },
  {
    family: 'MessageLabs',
    all: [
      ['x-msg-ref', /^/],
      ['from', /MAILER-DAEMON@messagelabs\.com/],
      ['subject', /^Mail Delivery Failure/],
    ],
  },
  {
    family: 'Facebook',
    all: [
      ['from', /^Facebook <mailer-daemon@mx\.facebook\.com>$/],
      ['subject', /^Sorry, your message could not be delivered$/],
    ],
  },
  { family: 'Bigfoot', all: [['from', /@bigfoot\.com>/]] },
  { family: 'Bigfoot', all: [['received', /\.bigfoot\.com /]] },
  { family: 'Barracuda', all: [['subject', /.our bulk email filter/]] },
];
