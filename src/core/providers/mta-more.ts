// More notice formats in the provider registry, from go-sisimai's Lhost modules (BSD-2-Clause): the fml mailing-list
// manager, Zoho Mail, Trend Micro InterScan MSS and IMail Server, GMX — how each notice is recognised and read. Pure data.
import { ADDRESS_SOURCE } from '../address.js';
import type { NoticeFormat, Provider } from './types.js';

/** fml (www.fml.org): a list's refusal ("You are not a member of this mailing list <list@...>"), loops. */
export const FML: NoticeFormat = {
  family: 'FML',
  need: 3,
  detect: { headers: ['x-mlserver'], from: /-admin@/, messageId: /.\.FML/ },
  recipientLines: [new RegExp(`<(${ADDRESS_SOURCE})>`)],
  end: [/^Original mail as follows:/m],
  reasons: [
    {
      reason: 'rejected',
      phrases: [
        ' header may cause mail loop',
        'NOT MEMBER article from ',
        'reject mail from ',
        'reject spammers:',
        'You are not a member of this mailing list',
      ],
    },
    {
      reason: 'systemerror',
      phrases: [' has detected a loop condition so that', 'Duplicated Message-ID', 'Loop Back Warning:'],
    },
    { reason: 'securityerror', phrases: ['Security alert:'] },
    // the notice's subject line, when its body says nothing the table above knows
    { reason: 'rejected', phrases: [' are not member', 'reject mail ', 'Spam mail from a spammer is rejected'] },
    { reason: 'systemerror', phrases: ['fml system error message', 'Loop Alert: ', 'WARNING: UNIX FROM Loop'] },
    { reason: 'securityerror', phrases: ['Security Alert'] },
  ],
};

/** Zoho Mail: "[Status: Error, Address: <a@b>, ResponseCode 421, , Host not reachable.]" or "a@b Invalid Address, ERROR_CODE :550, ...". */
export const ZOHO: NoticeFormat = {
  family: 'Zoho',
  detect: { headers: ['x-zohomail'] },
  recipientLines: [
    new RegExp(`^\\[Status: \\w+, Address: <(${ADDRESS_SOURCE})>`),
    new RegExp(`^(${ADDRESS_SOURCE}) [^\\n]*ERROR_CODE :`),
  ],
  end: [/^Received:/m],
  endsOnly: true,
  reasons: [{ reason: 'expired', phrases: ['Host not reachable'] }],
};

/** Trend Micro InterScan MSS: "Unable to deliver message to <a@b>", or its "Sent <<< RCPT TO:<a@b>" transcript. */
export const INTERSCAN: NoticeFormat = {
  family: 'InterScanMSS',
  detect: {
    from: /^"InterScan|\("InterScan /,
    subject: /Mail could not be delivered|メッセージを配信できません。|メール配信に失敗しました/,
  },
  recipientLines: [
    new RegExp(`Unable to deliver message to <(${ADDRESS_SOURCE})>`),
    new RegExp(`^Sent <<< RCPT TO:<(${ADDRESS_SOURCE})>`, 'i'),
  ],
  reasons: [{ reason: 'userunknown', phrases: ['Unable to deliver'] }],
};

/** Progress IMail Server ("X-Mailer: <SMTP32 v...>"): "Unknown user: a@b", "Delivery failed 20 attempts: a@b". */
export const IMAIL: NoticeFormat = {
  family: 'IMailServer',
  detect: { subject: /^Undeliverable Mail /, xMailer: /^<SMTP32 v/ },
  // Sisimai Lhost::IMailServer: "Cause: a@b" (9 or more characters before ": ") and "undeliverable to a@b" lines
  recipientLines: [
    new RegExp(`^[^:\\n]{9,}: <?(${ADDRESS_SOURCE})>?[ \\t]*$`),
    new RegExp(`^undeliverable +to +<?(${ADDRESS_SOURCE})`),
  ],
  end: [/^Original message follows\./m],
  reasons: [
    { reason: 'hostunknown', phrases: ['Unknown host'] },
    { reason: 'userunknown', phrases: ['Unknown user', 'Invalid final delivery userid'] },
    { reason: 'mailboxfull', phrases: ['User mailbox exceeds allowed size'] },
    { reason: 'virusdetected', phrases: ['Requested action not taken: virus detected'] },
    { reason: 'spamdetected', phrases: ['Blacklisted URL in message'] },
    { reason: 'expired', phrases: ['Delivery failed '] },
  ],
  // "undeliverable to a@b" names its recipient and no cause (the cause, if any, is the remote server's response after it)
  noCause: { line: /^undeliverable +to /, response: 'Body of message generated response:' },
};

/** GMX (and mail.com): Exim-like notices, one '"address":' or '<address>' line per recipient (go-sisimai Lhost::GMX). */
export const GMX: NoticeFormat = {
  family: 'GMX',
  detect: { headers: ['x-gmx-antispam'] },
  recipientLines: [new RegExp(`^"(${ADDRESS_SOURCE})":?\\s*$`), new RegExp(`^<(${ADDRESS_SOURCE})>:?\\s*$`)],
  end: [/^--- The header of the original message is following\. ---/m],
  reasons: [{ reason: 'expired', phrases: ['delivery retry timeout exceeded'] }],
};

const NOTICES: readonly NoticeFormat[] = [FML, ZOHO, INTERSCAN, IMAIL, GMX];

export const MORE_MTA_PROVIDERS: readonly Provider[] = NOTICES.map((n): Provider => ({ name: n.family, notices: [n] }));
